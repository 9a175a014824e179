package requeststate

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
)

func TestParseKeys(t *testing.T) {
	s1 := bytes.Repeat([]byte{0xfb}, 32) // base64 with '+' and '/' in the standard alphabet
	s2 := bytes.Repeat([]byte{0x07}, 48)
	std, url := base64.StdEncoding.EncodeToString(s1), base64.RawURLEncoding.EncodeToString(s1)
	if !strings.ContainsAny(std, "+/") || !strings.ContainsAny(url, "-_") {
		t.Fatalf("test secrets do not exercise both alphabets: %s %s", std, url)
	}
	for _, cfg := range []string{
		"k2:" + std + ",k1:" + base64.StdEncoding.EncodeToString(s2),
		" k2 : " + url + " ,\tk1:" + base64.RawStdEncoding.EncodeToString(s2) + "\n",
		"k2:" + base64.URLEncoding.EncodeToString(s1) + ",k1:" + base64.RawURLEncoding.EncodeToString(s2),
	} {
		keys, err := ParseKeys(cfg)
		if err != nil {
			t.Fatalf("ParseKeys(%q): %v", cfg, err)
		}
		if len(keys) != 2 || keys[0].ID != "k2" || !bytes.Equal(keys[0].Secret, s1) || keys[1].ID != "k1" || !bytes.Equal(keys[1].Secret, s2) {
			t.Errorf("ParseKeys(%q) = %v", cfg, keys)
		}
	}

	short := base64.StdEncoding.EncodeToString(make([]byte, 31))
	for _, cfg := range []string{
		"", "  ", "k1", "k1:", ":" + std, "k1:" + short, "k1:" + std + ",", "k1:" + std + ",,k2:" + url,
		"k1:" + std + ",k1:" + url, "k 1:" + std, "k1:not base64!", "k1:" + std[:len(std)-4] + "*",
	} {
		keys, err := ParseKeys(cfg)
		if err == nil {
			t.Errorf("ParseKeys(%q) = %v, want an error", cfg, keys)
			continue
		}
		if strings.Contains(err.Error(), std) || strings.Contains(err.Error(), url) || strings.Contains(err.Error(), std[:20]) {
			t.Errorf("ParseKeys(%q) error shows the secret: %v", cfg, err)
		}
	}
}

func TestRingFromEnv(t *testing.T) {
	b := testBinding(t)
	secret := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32))

	t.Setenv(EnvKeys, "k1:"+secret)
	a, err := RingFromEnv("", nil)
	if err != nil {
		t.Fatal(err)
	}
	replica := mustRing(t, []Key{testKey("k1", 1)}, nil)
	if _, err := replica.Open(mustSeal(t, a, b, nil), b); err != nil {
		t.Errorf("replica with the same key: %v", err)
	}

	t.Setenv("MY_KEYS", "k2:"+secret+",k1:"+secret)
	c, err := RingFromEnv("MY_KEYS", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.KeyIDs(), ","); got != "k2,k1" {
		t.Errorf("KeyIDs = %s", got)
	}

	t.Setenv("MY_KEYS", "k1:short")
	if _, err := RingFromEnv("MY_KEYS", nil); err == nil || !strings.Contains(err.Error(), "MY_KEYS") {
		t.Errorf("bad configuration: %v", err)
	}

	t.Setenv("MY_KEYS", "")
	r1, err := RingFromEnv("MY_KEYS", nil)
	if err != nil {
		t.Fatal(err)
	}
	r2, _ := RingFromEnv("MY_KEYS", nil)
	_, err = r2.Open(mustSeal(t, r1, b, nil), b)
	wantInvalid(t, err, ReasonUnknownKey)
}
