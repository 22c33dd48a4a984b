package main

import (
	"context"
	"io"
)

func runLs(ctx context.Context, args []string, stdout io.Writer) error { return nil }
