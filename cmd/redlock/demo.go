package main

import (
	"context"
	"io"
)

func runDemo(ctx context.Context, args []string, stdout io.Writer) error { return nil }
