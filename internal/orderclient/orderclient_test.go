package orderclient

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.temporal.io/api/errordetails/v1"
	failurepb "go.temporal.io/api/failure/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// updateWithStartFailure is the error an Update-with-Start returns when the server answers its update
// operation with code, as the SDK wraps it: "failed workflow update: <message>".
func updateWithStartFailure(t *testing.T, code codes.Code, msg string, detail ...proto.Message) error {
	t.Helper()
	var opDetails []*anypb.Any
	for _, d := range detail {
		opDetails = append(opDetails, mustAny(t, d))
	}
	details, err := anypb.New(&errordetails.MultiOperationExecutionFailure{Statuses: []*errordetails.MultiOperationExecutionFailure_OperationStatus{
		{Code: int32(codes.Aborted), Message: "Operation was aborted.",
			Details: []*anypb.Any{mustAny(t, &failurepb.MultiOperationExecutionAborted{})}},
		{Code: int32(code), Message: msg, Details: opDetails},
	}})
	if err != nil {
		t.Fatal(err)
	}
	st := status.FromProto(&spb.Status{Code: int32(codes.Aborted), Message: "MultiOperation could not be executed.", Details: []*anypb.Any{details}})
	var multi *serviceerror.MultiOperationExecution
	if !errors.As(serviceerror.FromStatus(st), &multi) {
		t.Fatalf("not a MultiOperationExecution: %v", serviceerror.FromStatus(st))
	}
	return fmt.Errorf("place order o-1: %w", fmt.Errorf("failed workflow update: %w", multi.OperationErrors()[1]))
}

func mustAny(t *testing.T, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestUndecided(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		// What CI saw: the server's wait for the update of an Update-with-Start ended while the workflow was
		// still deciding ("place order ...: failed workflow update: context deadline exceeded").
		{"server's wait ended (update operation DeadlineExceeded)", updateWithStartFailure(t, codes.DeadlineExceeded, "context deadline exceeded"), true},
		{"client's wait ended", fmt.Errorf("place order o-1: %w", client.NewWorkflowUpdateServiceTimeoutOrCanceledError(context.DeadlineExceeded)), true},
		{"too many updates in flight", fmt.Errorf("place order o-1: %w", serviceerror.NewResourceExhausted(0, "too many outstanding updates")), true},
		{"context deadline", fmt.Errorf("place order o-1: %w", context.DeadlineExceeded), true},
		// What CI's race pass saw: the workflow's task timed out twice on the loaded worker and the server
		// refused the update until one completed ("... due to Workflow Task in failed state.").
		{"workflow task failing", updateWithStartFailure(t, codes.FailedPrecondition,
			"Unable to perform workflow execution update due to Workflow Task in failed state.", &errordetails.WorkflowNotReadyFailure{}), true},
		{"update refused, not ready (plain update)", fmt.Errorf("pay order o-1: %w", serviceerror.NewWorkflowNotReady("not ready")), true},
		{"update refused as invalid", updateWithStartFailure(t, codes.InvalidArgument, "bad Update"), false},
		{"workflow closed", fmt.Errorf("place order o-1: %w", serviceerror.NewWorkflowExecutionAlreadyStarted("started", "", "")), false},
		{"context cancelled", fmt.Errorf("place order o-1: %w", context.Canceled), false},
		{"no error", nil, false},
	} {
		if got := Undecided(c.err); got != c.want {
			t.Errorf("%s: Undecided(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}
