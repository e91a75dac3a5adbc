package refundsim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/ordersaga/ordersaga/internal/refunds"
)

// faultsPath is the simulator's own settings (not part of a provider's API).
const faultsPath = "/v1/sim/faults"

// routes is the whole API: each path's handlers by method; any other path 404, any other method 405.
func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	route(mux, refunds.RefundsPath, map[string]http.HandlerFunc{
		http.MethodPost: s.postRefund,
		http.MethodGet:  s.getReport,
	})
	route(mux, faultsPath, map[string]http.HandlerFunc{
		http.MethodGet: s.getFaults,
		http.MethodPut: s.putFaults,
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, refunds.Problem{Code: "not-found", Reason: "no route " + r.URL.Path})
	})
	return mux
}

func route(mux *http.ServeMux, path string, byMethod map[string]http.HandlerFunc) {
	methods := make([]string, 0, len(byMethod))
	for m := range byMethod {
		methods = append(methods, m)
	}
	slices.Sort(methods)
	allow := strings.Join(methods, ", ")
	mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
		h, ok := byMethod[r.Method]
		if !ok {
			w.Header().Set("Allow", allow)
			writeJSON(w, http.StatusMethodNotAllowed, refunds.Problem{Code: "method-not-allowed",
				Reason: fmt.Sprintf("%s %s: want %s", r.Method, path, allow)})
			return
		}
		h(w, r)
	})
}

func (s *Server) getReport(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.Report())
}

func (s *Server) getFaults(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.Faults())
}

// putFaults sets every setting at once: a field left out is 0.
func (s *Server) putFaults(w http.ResponseWriter, r *http.Request) {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, refunds.MaxAnswerBytes))
	dec.DisallowUnknownFields()
	var st Settings
	if err := dec.Decode(&st); err != nil {
		writeJSON(w, http.StatusBadRequest, refunds.Problem{Code: refunds.CodeBadRequest, Reason: "faults: " + err.Error()})
		return
	}
	if err := st.check(); err != nil {
		writeJSON(w, http.StatusBadRequest, refunds.Problem{Code: refunds.CodeBadRequest, Reason: "faults: " + err.Error()})
		return
	}
	s.set(st)
	got := s.Faults()
	s.log.Info("faults set", "fail_share", got.FailShare, "timeout_share", got.TimeoutShare,
		"refuse_share", got.RefuseShare, "blackhole", time.Duration(got.BlackholeSeconds*float64(time.Second)).Round(time.Second))
	writeJSON(w, http.StatusOK, got)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(v); err != nil {
		status = http.StatusInternalServerError
		b.Reset()
		fmt.Fprintf(&b, `{"code":"internal","reason":%q}`+"\n", err.Error())
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}
