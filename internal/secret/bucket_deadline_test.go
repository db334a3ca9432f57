package secret_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/storage"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/landlord-dev/landlord/internal/secret"
	"github.com/landlord-dev/landlord/internal/secret/secrettest"
)

// A store whose cloud stops answering fails at secrets.store.timeout like one that is down, and
// the request to the cloud is given up then too, rather than left running behind the caller.
func TestADeadlineCutsOffACloudThatStopsAnswering(t *testing.T) {
	const deadline = 300 * time.Millisecond
	// What a loaded machine may add to the deadline before the call returns.
	const margin = 2 * time.Second
	ctx := context.Background()

	cases := map[string]func(t *testing.T) (secret.Store, *secrettest.Hangable){
		"an S3 bucket that stops answering": func(t *testing.T) (secret.Store, *secrettest.Hangable) {
			o := s3Objects(t)
			_, key, _ := awsKMS(t)
			return openURLStore(t, o.url, key), o.hang
		},
		"a Cloud Storage bucket named by gs:// URL that stops answering": func(t *testing.T) (secret.Store, *secrettest.Hangable) {
			o := gcsObjects(t)
			_, key, _ := awsKMS(t)
			return openURLStore(t, o.url, key), o.hang
		},
		"an AWS KMS that stops answering": func(t *testing.T) (secret.Store, *secrettest.Hangable) {
			o := s3Objects(t)
			kms, key, _ := awsKMS(t)
			return openURLStore(t, o.url, key), kms.Hangable
		},
		"the gcs backend's bucket that stops answering": func(t *testing.T) (secret.Store, *secrettest.Hangable) {
			gcs, err := secrettest.StartGCSEmulator(bucket)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(gcs.Stop)
			t.Setenv("STORAGE_EMULATOR_HOST", gcs.Host)
			client, err := storage.NewClient(ctx)
			if err != nil {
				t.Fatal(err)
			}
			fakeKMS := secrettest.StartKMS(keyA)
			t.Cleanup(fakeKMS.Stop)
			kmsClient, err := fakeKMS.Client(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return secret.NewGCSStore(client, kmsClient, bucket, "secrets/", keyA, time.Second), gcs.Hangable
		},
	}
	calls := map[string]func(secret.Store) error{
		"a read":    func(s secret.Store) error { _, err := s.Get(ctx, "ns", "s"); return err },
		"a write":   func(s secret.Store) error { return s.Put(ctx, apiKey("ns", "t", "2")) },
		"a listing": func(s secret.Store) error { _, err := s.List(ctx, "ns"); return err },
		"a delete": func(s secret.Store) error {
			return s.DeleteIf(ctx, "ns", "s", func(*corev1.Secret) bool { return true })
		},
	}
	for name, open := range cases {
		t.Run(name+" is cut off at the deadline, and so is each request to it", func(t *testing.T) {
			raw, hang := open(t)
			if err := raw.Put(ctx, apiKey("ns", "s", "1")); err != nil {
				t.Fatal(err)
			}
			store := secret.WithTimeout(raw, deadline)
			hang.SetHanging(true)
			defer hang.SetHanging(false)
			for call, run := range calls {
				start := time.Now()
				err := run(store)
				elapsed := time.Since(start)
				if err == nil || !strings.Contains(err.Error(), "no answer within "+deadline.String()) {
					t.Fatalf("%s returned %v, want the deadline's error", call, err)
				}
				if elapsed < deadline || elapsed > deadline+margin {
					t.Errorf("%s returned after %s, want %s (at most %s later)", call, elapsed, deadline, margin)
				}
				// The client closed the connection when the call's context ended: nothing of the
				// call is left waiting on the cloud. Every request that reached it was given up
				// (on a loaded machine the deadline may pass before a request is even sent, and
				// then none reached it).
				NewWithT(t).Eventually(func() int { return hang.Hung() - hang.GaveUp() }).WithTimeout(10*time.Second).Should(BeZero(),
					"%s left its request to the cloud running", call)
			}
			if hang.Hung() == 0 {
				t.Error("no request reached the hanging cloud: the deadline was never tried against one")
			}
		})
	}
}
