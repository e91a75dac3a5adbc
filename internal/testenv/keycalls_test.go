package testenv

import "testing"

func TestKeySlot_MatchesRedisCluster(t *testing.T) {
	t.Parallel()
	// Values from the Redis Cluster specification and CLUSTER KEYSLOT.
	if got := crc16([]byte("123456789")); got != 0x31C3 {
		t.Fatalf("crc16(123456789) = %#x, want 0x31c3", got)
	}
	for key, want := range map[string]uint16{"foo": 12182, "somekey": 11058, "{user1000}.following": 3443, "foo{}{bar}": 8363, "inv:{SKU-1}:avail": 10389} {
		if got := KeySlot(key); got != want {
			t.Errorf("KeySlot(%q) = %d, want %d", key, got, want)
		}
	}
}
