package harness

import "testing"

func TestCommandCalls(t *testing.T) {
	info := "# Commandstats\r\n" +
		"cmdstat_get:calls=5,usec=2,usec_per_call=0.40,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_evalsha:calls=5,usec=103,usec_per_call=20.60,rejected_calls=1,failed_calls=0\r\n" +
		"cmdstat_script|load:calls=1,usec=9,usec_per_call=9.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_info:calls=7,usec=70,usec_per_call=10.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_del:calls=x,usec=1\r\n" +
		"not_a_cmdstat:calls=100\r\n"
	if got := CommandCalls(info); got != 18 {
		t.Errorf("CommandCalls = %d, want 18 (5+5+1+7; a bad count and other lines ignored)", got)
	}
	if got := CommandCalls(info, "info", "script|load"); got != 10 {
		t.Errorf("CommandCalls skipping info and script|load = %d, want 10", got)
	}
	if got := CommandCalls(""); got != 0 {
		t.Errorf("CommandCalls of empty text = %d, want 0", got)
	}
}
