// Package fencetest holds the tests of package sqlfence against a real
// PostgreSQL server, through the pgx driver, which the root module does not
// depend on.
package fencetest
