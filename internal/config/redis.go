package config

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// RedisForm is how the processes reach Redis: one server, a Redis Cluster or a master watched by Sentinel.
// Its String is the variable that chooses it.
type RedisForm int

// The forms of a Redis connection; RedisNone is a configuration that sets none (RequireStores refuses it).
const (
	RedisNone     RedisForm = iota
	RedisServer             // REDIS_ADDR
	RedisCluster            // REDIS_CLUSTER_ADDRS
	RedisSentinel           // REDIS_SENTINEL_ADDRS with REDIS_SENTINEL_MASTER
)

// DefaultMarkerReplicas is how many replicas must acknowledge an idempotency marker when REDIS_MARKER_REPLICAS
// is not set: one on a Redis Cluster or under Sentinel, where a failover promotes a replica that may lack the
// master's last writes; none on one server (where appendfsync is the operator's choice: docs/operations.md).
func (f RedisForm) DefaultMarkerReplicas() int {
	if f == RedisCluster || f == RedisSentinel {
		return 1
	}
	return 0
}

// RedisClusterStateReload is how old a cluster client's map of the slots may get before it asks the cluster
// again. A master that dies answers nothing, not MOVED, so the client learns of its replica's promotion only
// from a reload: with go-redis's default of 60 s every command of that master's slots failed for up to a
// minute after the cluster had failed over. One CLUSTER SLOTS a second per client is the price.
const RedisClusterStateReload = time.Second

// redisFormVariables are the variables that choose a form, in the order of the forms.
var redisFormVariables = []string{"REDIS_ADDR", "REDIS_CLUSTER_ADDRS", "REDIS_SENTINEL_ADDRS"}

func (f RedisForm) String() string {
	if f <= RedisNone || int(f) > len(redisFormVariables) {
		return "none"
	}
	return redisFormVariables[f-1]
}

// ErrRedisNotSet is the error of a configuration that sets no form of Redis connection.
var ErrRedisNotSet = errors.New("no Redis is configured: set one of REDIS_ADDR (one server, e.g. 127.0.0.1:6379), " +
	"REDIS_CLUSTER_ADDRS (the seed addresses of a Redis Cluster) or REDIS_SENTINEL_ADDRS with REDIS_SENTINEL_MASTER (Sentinel)")

// readRedis reads the Redis connection: its form, the credentials and TLS. Every variable is read whatever
// the others hold (the tests list what FromEnv reads by calling it on an empty environment). No error carries
// a password.
func (c *Config) readRedis(getenv func(string) string) []error {
	var errs []error
	get := func(name string) string { return strings.TrimSpace(getenv(name)) }
	c.RedisAddr = get("REDIS_ADDR")
	c.RedisKeyPrefix = get("REDIS_KEY_PREFIX")
	cluster, sentinels := get("REDIS_CLUSTER_ADDRS"), get("REDIS_SENTINEL_ADDRS")
	c.RedisSentinelMaster = get("REDIS_SENTINEL_MASTER")
	c.RedisSentinelPassword = get("REDIS_SENTINEL_PASSWORD")
	c.RedisUsername = get("REDIS_USERNAME")
	c.RedisPassword = get("REDIS_PASSWORD")
	tlsOn := get("REDIS_TLS")
	c.RedisTLSCAFile = get("REDIS_TLS_CA_FILE")
	c.RedisTLSServerName = get("REDIS_TLS_SERVER_NAME")

	var set []string
	for i, v := range []string{c.RedisAddr, cluster, sentinels} {
		if v != "" {
			set = append(set, redisFormVariables[i])
		}
	}
	switch len(set) {
	case 0, 1:
	case 2:
		errs = append(errs, fmt.Errorf("%s and %s are both set: set exactly one of %s", set[0], set[1], strings.Join(redisFormVariables, ", ")))
	default:
		errs = append(errs, fmt.Errorf("%s, %s and %s are all set: set exactly one of %s", set[0], set[1], set[2], strings.Join(redisFormVariables, ", ")))
	}
	if c.RedisAddr != "" {
		if err := checkHostPort(c.RedisAddr); err != nil {
			errs = append(errs, fmt.Errorf("REDIS_ADDR=%q: %w", shownAddr(c.RedisAddr), err))
		}
	}
	var err error
	if c.RedisClusterAddrs, err = readAddrList("REDIS_CLUSTER_ADDRS", cluster); err != nil {
		errs = append(errs, err)
	}
	if c.RedisSentinelAddrs, err = readAddrList("REDIS_SENTINEL_ADDRS", sentinels); err != nil {
		errs = append(errs, err)
	}
	switch {
	case sentinels != "" && c.RedisSentinelMaster == "":
		errs = append(errs, errors.New("REDIS_SENTINEL_MASTER is not set: with REDIS_SENTINEL_ADDRS, the name the sentinels monitor the master under"))
	case sentinels == "" && c.RedisSentinelMaster != "":
		errs = append(errs, errors.New("REDIS_SENTINEL_MASTER is set without REDIS_SENTINEL_ADDRS: set both (Sentinel) or neither"))
	}
	if sentinels == "" && c.RedisSentinelPassword != "" {
		errs = append(errs, errors.New("REDIS_SENTINEL_PASSWORD is set without REDIS_SENTINEL_ADDRS: it is the sentinels' password"))
	}

	if v := get("REDIS_MARKER_REPLICAS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > maxMarkerReplicas {
			errs = append(errs, fmt.Errorf("REDIS_MARKER_REPLICAS=%q: want how many replicas must acknowledge an idempotency marker, 0 to %d", v, maxMarkerReplicas))
		}
		c.RedisMarkerReplicas = n
	} else {
		form, _ := c.RedisForm()
		c.RedisMarkerReplicas = form.DefaultMarkerReplicas()
	}

	if tlsOn != "" {
		b, err := strconv.ParseBool(tlsOn)
		if err != nil {
			errs = append(errs, fmt.Errorf("REDIS_TLS=%q: want true or false", tlsOn))
		}
		c.RedisTLS = b
	}
	tlsErrs := 0
	for _, s := range []struct{ name, v string }{
		{"REDIS_TLS_CA_FILE", c.RedisTLSCAFile}, {"REDIS_TLS_SERVER_NAME", c.RedisTLSServerName},
	} {
		if s.v != "" && !c.RedisTLS {
			errs = append(errs, fmt.Errorf("%s is set but TLS is off: set REDIS_TLS=true to reach Redis over TLS", s.name))
			tlsErrs++
		}
	}
	if c.RedisTLS && tlsErrs == 0 {
		if _, err := c.RedisTLSConfig(); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// maxMarkerReplicas bounds REDIS_MARKER_REPLICAS: more than a master has replicas would turn the fast path off
// for good.
const maxMarkerReplicas = 16

// readAddrList splits the comma-separated addresses of the variable; each must be host:port.
func readAddrList(variable, v string) ([]string, error) {
	if v == "" {
		return nil, nil
	}
	var addrs []string
	var errs []error
	for _, a := range strings.Split(v, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			errs = append(errs, fmt.Errorf("%s: an empty address in the comma-separated list", variable))
			continue
		}
		if err := checkHostPort(a); err != nil {
			errs = append(errs, fmt.Errorf("%s: address %q: %w", variable, shownAddr(a), err))
			continue
		}
		addrs = append(addrs, a)
	}
	return addrs, errors.Join(errs...)
}

// checkHostPort refuses an address that is not host:port with a host and a port number.
func checkHostPort(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err == nil && host != "" {
		if n, perr := strconv.Atoi(port); perr == nil && n > 0 && n < 1<<16 {
			return nil
		}
	}
	return errors.New("want host:port, e.g. 127.0.0.1:6379")
}

// shownAddr is a bad address as an error shows it: a URL's user information (redis://user:password@host),
// which an operator may paste from a provider's console, is cut off.
func shownAddr(addr string) string {
	if i := strings.LastIndex(addr, "@"); i >= 0 {
		return "…" + addr[i:]
	}
	return addr
}

// RedisForm returns the form of the Redis connection and its addresses: REDIS_ADDR's one server, the
// cluster's seeds or the sentinels.
func (c Config) RedisForm() (RedisForm, []string) {
	switch {
	case c.RedisAddr != "":
		return RedisServer, []string{c.RedisAddr}
	case len(c.RedisClusterAddrs) > 0:
		return RedisCluster, c.RedisClusterAddrs
	case len(c.RedisSentinelAddrs) > 0:
		return RedisSentinel, c.RedisSentinelAddrs
	}
	return RedisNone, nil
}

// RedisWhere says where the processes reach Redis, as errors and logs name it: the form's variable and its
// addresses, and the master's name with Sentinel; never a credential.
func (c Config) RedisWhere() string {
	form, addrs := c.RedisForm()
	switch form {
	case RedisNone:
		return ""
	case RedisSentinel:
		return fmt.Sprintf("%s=%s (REDIS_SENTINEL_MASTER=%s)", form, strings.Join(addrs, ","), c.RedisSentinelMaster)
	}
	return form.String() + "=" + strings.Join(addrs, ",")
}

// RedisTLSConfig is the TLS configuration of every Redis connection, sentinels included (nil: plaintext): the
// CA of REDIS_TLS_CA_FILE (else the system's) and REDIS_TLS_SERVER_NAME (else the host of each address). The
// file is read at each call, that is at start: a rotated CA takes a restart.
func (c Config) RedisTLSConfig() (*tls.Config, error) {
	if !c.RedisTLS {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.RedisTLSServerName}
	if c.RedisTLSCAFile != "" {
		pool, err := readCAFile("REDIS_TLS_CA_FILE", c.RedisTLSCAFile)
		if err != nil {
			return nil, err
		}
		tc.RootCAs = pool
	}
	return tc, nil
}
