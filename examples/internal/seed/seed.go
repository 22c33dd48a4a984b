// Package seed starts what the seed-system examples run on: real
// redis-server lock nodes (internal/redistest) and a real PostgreSQL server
// (internal/pgtest), opened through database/sql with the pgx driver.
package seed

import (
	"context"
	"database/sql"
	"fmt"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	"github.com/quorumlock/quorumlock/internal/pgtest"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
)

// Env is a set of lock nodes and, when asked for, a database.
type Env struct {
	Redis *redistest.Cluster
	PG    *pgtest.Server
	DB    *sql.DB
}

// Start starts n redis-server nodes and, with withDB, a PostgreSQL server.
// The caller must Close the Env.
func Start(ctx context.Context, n int, withDB bool) (*Env, error) {
	redistest.DiscardRedisLogs()
	c, err := redistest.Start(ctx, n, redistest.Options{})
	if err != nil {
		return nil, err
	}
	e := &Env{Redis: c}
	if withDB {
		if e.PG, err = pgtest.Start(ctx); err != nil {
			_ = e.Close()
			return nil, err
		}
		if e.DB, err = OpenDB(ctx, e.PG.DSN()); err != nil {
			_ = e.Close()
			return nil, err
		}
	}
	return e, nil
}

// OpenDB opens and pings a PostgreSQL database through pgx.
func OpenDB(ctx context.Context, dsn string) (*sql.DB, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(20)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("ping %s: %w", dsn, err)
	}
	return db, nil
}

// Nodes are lock nodes over fresh go-redis clients of the cluster.
func (e *Env) Nodes() []node.Node {
	var nodes []node.Node
	for _, c := range e.Redis.Clients() {
		nodes = append(nodes, redisnode.New(c))
	}
	return nodes
}

// Close stops everything Start started.
func (e *Env) Close() error {
	var errs []error
	if e.DB != nil {
		errs = append(errs, e.DB.Close())
	}
	if e.PG != nil {
		errs = append(errs, e.PG.Close())
	}
	if e.Redis != nil {
		errs = append(errs, e.Redis.Close())
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
