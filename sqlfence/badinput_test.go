package sqlfence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/quorumlock/quorumlock/sqlfence"
	"github.com/quorumlock/quorumlock/statuslock"
)

// Bad input is a typed error before anything reaches a database (db is an
// *sql.DB without a driver: any statement sent would fail differently).
func TestBadInput(t *testing.T) {
	ctx := context.Background()
	var nilCtx context.Context
	var nilDB *sql.DB
	db := &sql.DB{}
	tbl, err := sqlfence.New("tasks")
	if err != nil {
		t.Fatal(err)
	}
	set := sqlfence.Set{Column: "state", Value: "done"}
	for name, c := range map[string]struct {
		call func() error
		want error
	}{
		"bad table":         {func() error { _, err := sqlfence.New("tasks; DROP TABLE x"); return err }, sqlfence.ErrInvalidArgument},
		"empty table":       {func() error { _, err := sqlfence.New(""); return err }, sqlfence.ErrInvalidArgument},
		"bad id column":     {func() error { _, err := sqlfence.New("t", sqlfence.WithIDColumn("a b")); return err }, sqlfence.ErrInvalidArgument},
		"bad fence column":  {func() error { _, err := sqlfence.New("t", sqlfence.WithFenceColumn("")); return err }, sqlfence.ErrInvalidArgument},
		"same columns":      {func() error { _, err := sqlfence.New("t", sqlfence.WithFenceColumn("id")); return err }, sqlfence.ErrInvalidArgument},
		"bad placeholder":   {func() error { _, err := sqlfence.New("t", sqlfence.WithPlaceholder(7)); return err }, sqlfence.ErrInvalidArgument},
		"nil option":        {func() error { _, err := sqlfence.New("t", nil); return err }, sqlfence.ErrInvalidArgument},
		"nil ctx":           {func() error { return tbl.Update(nilCtx, db, 1, 1, set) }, sqlfence.ErrInvalidArgument},
		"nil db":            {func() error { return tbl.Update(ctx, nil, 1, 1, set) }, sqlfence.ErrInvalidArgument},
		"typed nil db":      {func() error { return tbl.Update(ctx, nilDB, 1, 1, set) }, sqlfence.ErrInvalidArgument},
		"fence 0":           {func() error { return tbl.Update(ctx, db, 1, 0, set) }, sqlfence.ErrInvalidArgument},
		"fence > MaxInt64":  {func() error { return tbl.Update(ctx, db, 1, math.MaxInt64+1, set) }, sqlfence.ErrFenceRange},
		"fence MaxUint64":   {func() error { return tbl.Update(ctx, db, 1, math.MaxUint64, set) }, sqlfence.ErrFenceRange},
		"no column":         {func() error { return tbl.Update(ctx, db, 1, 1) }, sqlfence.ErrInvalidArgument},
		"bad column":        {func() error { return tbl.Update(ctx, db, 1, 1, sqlfence.Set{Column: "x=1--"}) }, sqlfence.ErrInvalidArgument},
		"set fence column":  {func() error { return tbl.Update(ctx, db, 1, 1, sqlfence.Set{Column: "lock_fence"}) }, sqlfence.ErrInvalidArgument},
		"set id column":     {func() error { return tbl.Update(ctx, db, 1, 1, sqlfence.Set{Column: "id"}) }, sqlfence.ErrInvalidArgument},
		"Fence nil db":      {func() error { _, err := tbl.Fence(ctx, nil, 1); return err }, sqlfence.ErrInvalidArgument},
		"store nil db":      {func() error { _, err := sqlfence.NewStatusStore(nil, ""); return err }, statuslock.ErrInvalidArgument},
		"store bad table":   {func() error { _, err := sqlfence.NewStatusStore(db, "a-b"); return err }, statuslock.ErrInvalidArgument},
		"store fence range": {func() error { return mustStore(t, db).Set(ctx, "svc", statuslock.StatusRunning, math.MaxInt64+1) }, sqlfence.ErrFenceRange},
		"store fence 0":     {func() error { return mustStore(t, db).Set(ctx, "svc", statuslock.StatusRunning, 0) }, statuslock.ErrInvalidArgument},
		"store bad status":  {func() error { return mustStore(t, db).Set(ctx, "svc", "BOGUS", 1) }, statuslock.ErrInvalidArgument},
		"store empty id":    {func() error { return mustStore(t, db).Set(ctx, "", statuslock.StatusRunning, 1) }, statuslock.ErrInvalidArgument},
		"store get nil ctx": {func() error { _, err := mustStore(t, db).Get(nilCtx, "svc"); return err }, statuslock.ErrInvalidArgument},
	} {
		t.Run(name, func(t *testing.T) {
			if err := c.call(); !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
		})
	}
	var nilTable *sqlfence.Table
	if err := nilTable.Update(ctx, db, 1, 1, set); !errors.Is(err, sqlfence.ErrInvalidArgument) {
		t.Fatalf("nil Table: %v", err)
	}
}

func mustStore(t *testing.T, db *sql.DB) *sqlfence.StatusStore {
	s, err := sqlfence.NewStatusStore(db, "")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ExampleTable_Migration() {
	tasks, _ := sqlfence.New("tasks")
	fmt.Println(tasks.Migration())
	// Output: ALTER TABLE tasks ADD COLUMN IF NOT EXISTS lock_fence BIGINT NOT NULL DEFAULT 0
}
