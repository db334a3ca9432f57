package operator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTheMetricsServerServesTheCertificateItIsGiven(t *testing.T) {
	withCert := t.TempDir()
	for _, name := range []string{"tls.crt", "tls.key"} {
		if err := os.WriteFile(filepath.Join(withCert, name), []byte("pem"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	keyOnly := t.TempDir()
	if err := os.WriteFile(filepath.Join(keyOnly, "tls.key"), []byte("pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		opts    Options
		certDir string // of the metrics server's options
		refused string
	}{
		{name: "without a directory the server makes a self-signed certificate", opts: Options{}, certDir: ""},
		{name: "a directory holding tls.crt and tls.key is served from", opts: Options{MetricsCertDir: withCert}, certDir: withCert},
		{name: "a directory without the certificate is refused rather than served self-signed", opts: Options{MetricsCertDir: keyOnly}, refused: "tls.crt"},
		{name: "plain HTTP for local use needs no certificate", opts: Options{MetricsCertDir: keyOnly, MetricsInsecure: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := checkMetricsCertificate(c.opts)
			if c.refused != "" {
				if err == nil || !strings.Contains(err.Error(), c.refused) {
					t.Fatalf("checkMetricsCertificate: %v; want a refusal naming %s", err, c.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := metricsOptions(c.opts); !c.opts.MetricsInsecure && (got.CertDir != c.certDir || !got.SecureServing) {
				t.Errorf("metrics options: cert dir %q, secure %v; want %q over HTTPS", got.CertDir, got.SecureServing, c.certDir)
			}
		})
	}
}
