// Package pgtest starts a real PostgreSQL server for tests and example
// programs: initdb in a temp dir, then postgres on a free loopback port, with
// its socket in the same dir; Close stops it (SIGINT, a fast shutdown) and
// removes the dir. Nothing is shared with a PostgreSQL already running.
// In a test:
//
//	pg := pgtest.StartT(t) // skipped if PostgreSQL is missing (a failure with CI=true)
//	db, _ := sql.Open("pgx", pg.DSN())
//
// The binaries (initdb, postgres) are looked up in $PG_BIN, then in PATH, then
// in Debian's /usr/lib/postgresql/*/bin (the newest version): install them
// with apt-get install -y postgresql. initdb and postgres refuse to run as
// root, so as root the harness runs both as the user "nobody" (set
// PGTEST_USER for another), with the temp dir handed to that user.
//
// The server is for tests: fsync is off, authentication is "trust" for the
// superuser "postgres" on loopback only.
package pgtest
