package sim

import (
	"fmt"

	"github.com/quorumlock/quorumlock/chaos"
)

// Timeline writes the register history of a failing schedule as
// porcupine's HTML, with the believed-valid intervals, overlaps and fault
// windows, as the chaos runs do.
func Timeline(path string, o *Outcome, f *chaos.Findings) error {
	var faults []chaos.Window
	for _, w := range o.Faults {
		faults = append(faults, chaos.Window{Fault: fmt.Sprint(w.Kind), From: w.From, To: w.To})
	}
	return chaos.WriteTimeline(path, f, o.CSS, faults, true)
}
