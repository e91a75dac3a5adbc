package workflows

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// messageOrderDir holds histories of orders whose messages raced, recorded on the in-process Temporal server
// with the workflow code of 34743f9, before both routes went through one inbox per kind (order_messages.go).
// The release histories (TestReplay) have at most one message waiting at a time, so they cannot tell the
// order in which the saga takes waiting messages; these can. They were recorded by holding an activity
// (the saga is busy and messages wait) or by slowing the workflow task of a "hold" signal, which the
// workflow ignores (the messages then arrive in one workflow task while the saga waits).
var messageOrderDir = filepath.Join("testdata", "message-order")

// messageOrders names each history and what it pins.
var messageOrders = map[string]string{
	// Busy: a wrong-amount payment's RecordPayment is held while the messages arrive.
	"busy_cancel_signal_then_pay_update":  "a waiting payment goes before a waiting cancel (PAID)",
	"busy_cancel_update_then_pay_signal":  "the same with the routes swapped (PAID)",
	"busy_update_right_then_signal_wrong": "a waiting signal goes before a waiting update of its kind",
	"busy_two_updates_signal_and_cancel":  "signal, then the updates in arrival order, then the cancel",
	// Waiting in the select: the first message to come wins, and signals come before the updates' handlers run.
	"same_task_cancel_signal_and_pay_update":  "cancel signal and pay update in one task: CANCELLED, payment refunded",
	"same_task_pay_update_then_cancel_signal": "the update sent first: still CANCELLED",
	"same_task_cancel_then_pay_signals":       "two signals in one task: the first (cancel) wins",
	"same_task_cancel_update_then_pay_update": "two updates in one task: the first (cancel) wins",
	"same_task_two_pay_updates":               "two pay updates: the first (wrong amount) is recorded, the second applied",
	"same_task_deadline_then_pay_signal":      "the timer fired before the signal in one task: EXPIRED, payment refunded",
	"same_task_pay_signal_then_deadline":      "the signal before the timer: PAID",
	// Closed: late payments by both routes arrive while a late update's refund runs; each is refunded once
	// (recorded order u1, u2, s1, s2; replay checks the four RecordPayment commands, not their inputs).
	"drain_updates_and_signal": "late payments by both routes, arriving while one is being refunded",
}

// TestReplayMessageOrder replays the message-order histories: a change of the order in which the saga
// takes its messages changes the commands of these histories and fails here (it needs a version, doc.go).
func TestReplayMessageOrder(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(messageOrderDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		seen[name] = true
		what, ok := messageOrders[name]
		if !ok {
			t.Errorf("%s: not listed in messageOrders", f)
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			t.Log(what)
			replay(t, f)
		})
	}
	for name := range messageOrders {
		if !seen[name] {
			if _, err := os.Stat(filepath.Join(messageOrderDir, name+".json")); err != nil {
				t.Errorf("history %s: %v", name, err)
			}
		}
	}
}
