package sale

import (
	"encoding/json"
	"strings"
	"testing"
)

// A bot's visit orders again as the same user, for the same SKU and quantity, with a fresh Idempotency-Key each
// time; honest buyers keep their one key (and their resend) as before, and the share of bots is --bot-ratio.
func TestBotsReuseTheirUserAndChangeKeys(t *testing.T) {
	cfg := DefaultConfig()
	cfg.AdminToken, cfg.WebhookSecret, cfg.RunID = "a", "w", "bots"
	cfg.Buyers, cfg.BotRatio, cfg.BotAttempts, cfg.SKUs, cfg.Qty = 50, 0.2, 20, 3, 2
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Bots() != 10 {
		t.Fatalf("Bots() = %d, want 10 (0.2 of 50)", cfg.Bots())
	}
	r := &Runner{cfg: cfg, skus: cfg.SKUNames()}
	keys := map[string]bool{}
	var bots, visits int
	for seq := range int64(1000) {
		p := r.plan(seq)
		visits++
		if !p.bot {
			if !strings.HasPrefix(p.userID, "fsu-") {
				t.Fatalf("honest buyer %d has user %q", seq, p.userID)
			}
			if keys[p.key] {
				t.Fatalf("key %s used twice", p.key)
			}
			keys[p.key] = true
			continue
		}
		bots++
		if !strings.HasPrefix(p.userID, "fsb-") || p.duplicate {
			t.Fatalf("bot plan %+v: want a fsb- user and no same-key resend", p)
		}
		for k := range cfg.BotAttempts {
			q := p.botAttempt(cfg.RunID, k)
			if q.userID != p.userID || q.sku != p.sku || string(q.body) != string(p.body) {
				t.Fatalf("attempt %d of bot visit %d changed the order: %+v vs %+v", k, seq, q, p)
			}
			if keys[q.key] {
				t.Fatalf("attempt %d of bot visit %d reuses key %s", k, seq, q.key)
			}
			keys[q.key] = true
			var req struct {
				UserID string `json:"user_id"`
			}
			if err := json.Unmarshal(q.body, &req); err != nil || req.UserID != p.userID {
				t.Fatalf("body %s does not name user %s", q.body, p.userID)
			}
		}
	}
	// Users are drawn uniformly: about a fifth of the visits are bots'.
	if bots < visits/10 || bots > visits*3/10 {
		t.Errorf("%d of %d visits are bots', want about a fifth", bots, visits)
	}

	// Without --bot-ratio nobody is a bot, and the plans are today's.
	cfg.BotRatio = 0
	r = &Runner{cfg: cfg, skus: cfg.SKUNames()}
	for seq := range int64(200) {
		if p := r.plan(seq); p.bot || !strings.HasPrefix(p.userID, "fsu-") {
			t.Fatalf("plan %+v with no bots", p)
		}
	}
}

func TestConfigValidatesTheLimitAndTheBots(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Config)
		want   string // "" = valid
	}{
		{"defaults: no limit, no bots", func(*Config) {}, ""},
		{"limit and bots", func(c *Config) { c.PerUserLimit, c.BotRatio, c.BotAttempts = 2, 0.1, 5 }, ""},
		{"every buyer a bot", func(c *Config) { c.BotRatio = 1 }, ""},
		{"negative limit", func(c *Config) { c.PerUserLimit = -1 }, "--per-user-limit -1"},
		{"qty above the limit", func(c *Config) { c.PerUserLimit, c.Qty = 2, 3 }, "--qty 3 is above --per-user-limit 2"},
		{"bot ratio above 1", func(c *Config) { c.BotRatio = 1.5 }, "--bot-ratio 1.5"},
		{"negative bot ratio", func(c *Config) { c.BotRatio = -0.1 }, "--bot-ratio -0.1"},
		{"bot ratio NaN", func(c *Config) { c.BotRatio = zero / zero }, "--bot-ratio NaN"},
		{"no bot attempts", func(c *Config) { c.BotAttempts = 0 }, "--bot-attempts 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.AdminToken, cfg.WebhookSecret = "a", "w"
			tt.change(&cfg)
			err := cfg.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate = %v, want an error naming %q", err, tt.want)
			}
		})
	}
}

var zero float64

func TestParamsNameTheLimitAndTheBots(t *testing.T) {
	cfg := DefaultConfig()
	cfg.PerUserLimit, cfg.BotRatio, cfg.BotAttempts = 2, 0.25, 7
	rep := &Report{Params: cfg.Params()}
	if rep.Param("per-user-limit") != "2" || rep.Param("bot-ratio") != "0.25" || rep.Param("bot-attempts") != "7" {
		t.Errorf("params %v", cfg.Params())
	}
	if (&Report{Params: DefaultConfig().Params()}).Param("per-user-limit") != "none" {
		t.Error("no limit must read none")
	}
}

// A 409 …/limit-exceeded is a final answer (like sold out), never a key still deciding.
func TestLimitExceededIsARefusal(t *testing.T) {
	lim := Answer{Status: 409, Problem: Problem{Type: "https://ordersaga.dev/problems/limit-exceeded"}}
	sold := Answer{Status: 409, Problem: Problem{Type: "https://ordersaga.dev/problems/sold-out"}}
	busy := Answer{Status: 409, Problem: Problem{Type: "https://ordersaga.dev/problems/in-progress"}}
	if !refused(lim) || !refused(sold) || refused(busy) || !limitExceeded(lim.Problem) || limitExceeded(sold.Problem) {
		t.Errorf("refused: limit %v sold out %v in progress %v", refused(lim), refused(sold), refused(busy))
	}
	if v, ok := PerUserLimitOf([]byte(`{"sku":"A","per_user_limit":2}`)); !ok || v != 2 {
		t.Errorf("PerUserLimitOf = %d, %v", v, ok)
	}
	if _, ok := PerUserLimitOf([]byte(`{"sku":"A","db_stock":3}`)); ok {
		t.Error("a body without per_user_limit must say so")
	}
}
