package secret_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/landlord-dev/landlord/internal/secret"
)

func newFileStore(t *testing.T) *secret.FileStore {
	t.Helper()
	dir := t.TempDir()
	s, err := secret.NewFileStore(filepath.Join(dir, "data"), filepath.Join(dir, "data", "key.json"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// s3Store is a url store on S3 (gofakes3) under an AWS KMS key (Local KMS), and the server.
func s3Store(t *testing.T) (*secret.BucketStore, objectServer) {
	t.Helper()
	o := s3Objects(t)
	_, key, _ := awsKMS(t)
	return openURLStore(t, o.url, key), o
}

// records fills a store as a cluster would: shared secrets and tenants' credentials.
func records(t *testing.T, s secret.Store) []*corev1.Secret {
	t.Helper()
	var out []*corev1.Secret
	for i, ns := range []string{"landlord-templates", "landlord-templates", "tenant-acme", "tenant-globex"} {
		sec := apiKey(ns, fmt.Sprintf("secret-%d", i), fmt.Sprintf("value-%d", i))
		sec.Annotations = map[string]string{"tenancy.landlord.dev/tenant-uid": fmt.Sprintf("uid-%d", i)}
		if err := s.Put(context.Background(), sec); err != nil {
			t.Fatal(err)
		}
		out = append(out, sec)
	}
	return out
}

// holdsExactly checks a store holds these records and no other, each equal.
func holdsExactly(t *testing.T, s secret.Migratable, want []*corev1.Secret) {
	t.Helper()
	ctx := context.Background()
	c, err := s.Contents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Records) != len(want) {
		t.Fatalf("the store holds %d records (%v), want %d", len(c.Records), c.Records, len(want))
	}
	for _, w := range want {
		got, err := s.Get(ctx, w.Namespace, w.Name)
		if err != nil {
			t.Fatalf("%s/%s: %v", w.Namespace, w.Name, err)
		}
		if string(got.Data["token"]) != string(w.Data["token"]) || !reflect.DeepEqual(got.Annotations, w.Annotations) || !reflect.DeepEqual(got.Labels, w.Labels) {
			t.Fatalf("%s/%s reads back as %+v", w.Namespace, w.Name, got)
		}
	}
}

// failingPuts is a target that stops taking writes after a number of them, as a migration that
// is interrupted does.
type failingPuts struct {
	secret.Migratable
	left int
}

func (f *failingPuts) Put(ctx context.Context, s *corev1.Secret) error {
	if f.left == 0 {
		return errors.New("interrupted")
	}
	f.left--
	return f.Migratable.Put(ctx, s)
}

func TestAMigrationCopiesEveryRecordUnderTheTargetsKey(t *testing.T) {
	ctx := context.Background()

	t.Run("from a directory to S3 and back, every record reads back the same", func(t *testing.T) {
		file := newFileStore(t)
		want := records(t, file)
		fileID, _ := file.Identity(ctx)
		s3, objects := s3Store(t)

		report, err := secret.Migration{From: file, To: s3, Timeout: time.Minute}.Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if report.Copied != len(want) || report.Unchanged != 0 || report.Resumed || report.From != fileID || report.To == "" || report.To == fileID {
			t.Fatalf("report %+v", report)
		}
		holdsExactly(t, s3, want)
		if c, _ := s3.Contents(ctx); c.MigratedFrom != fileID || c.Identity != report.To {
			t.Fatalf("the target notes %q and has identity %q, want %q and %q", c.MigratedFrom, c.Identity, fileID, report.To)
		}
		// Re-encrypted: what S3 holds is sealed under its AWS KMS key, which the directory's
		// store cannot use.
		if _, err := file.Get(ctx, "tenant-acme", "secret-2"); err != nil {
			t.Fatal(err)
		}
		if raw := objects.read("tenant-acme/secret-2"); len(raw) == 0 {
			t.Fatal("the record is not in the bucket")
		}

		back := newFileStore(t)
		report, err = secret.Migration{From: s3, To: back, Timeout: time.Minute}.Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if report.Copied != len(want) || report.From == report.To {
			t.Fatalf("report %+v", report)
		}
		holdsExactly(t, back, want)
	})

	t.Run("a second run after an interruption completes without copying a record twice", func(t *testing.T) {
		file := newFileStore(t)
		want := records(t, file)
		s3, _ := s3Store(t)
		_, err := secret.Migration{From: file, To: &failingPuts{Migratable: s3, left: 2}, Timeout: time.Minute}.Run(ctx)
		if err == nil {
			t.Fatal("the interrupted migration succeeded")
		}
		report, err := secret.Migration{From: file, To: s3, Timeout: time.Minute}.Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !report.Resumed || report.Unchanged != 2 || report.Copied != len(want)-2 || report.Removed != 0 {
			t.Fatalf("report %+v, want 2 records found copied and %d copied", report, len(want)-2)
		}
		holdsExactly(t, s3, want)
	})

	t.Run("a record that left the source between two runs leaves the target too", func(t *testing.T) {
		file := newFileStore(t)
		want := records(t, file)
		s3, _ := s3Store(t)
		if _, err := (secret.Migration{From: file, To: s3}).Run(ctx); err != nil {
			t.Fatal(err)
		}
		if err := file.Delete(ctx, want[0].Namespace, want[0].Name); err != nil {
			t.Fatal(err)
		}
		report, err := secret.Migration{From: file, To: s3}.Run(ctx)
		if err != nil || report.Removed != 1 || report.Unchanged != len(want)-1 {
			t.Fatalf("report %+v, %v", report, err)
		}
		holdsExactly(t, s3, want[1:])
	})

	t.Run("a store written during the copy is not switched to, and a second run completes", func(t *testing.T) {
		for name, write := range map[string]func(file secret.Store, want []*corev1.Secret) *corev1.Secret{
			"a record added": func(file secret.Store, _ []*corev1.Secret) *corev1.Secret {
				return apiKey("tenant-initech", "db-main", "new")
			},
			"a record rotated": func(file secret.Store, want []*corev1.Secret) *corev1.Secret {
				rotated := want[0].DeepCopy()
				rotated.Data["token"] = []byte("rotated")
				return rotated
			},
		} {
			t.Run(name, func(t *testing.T) {
				file := newFileStore(t)
				want := records(t, file)
				s3, _ := s3Store(t)
				// An operator still running writes to the old store once the copy began.
				late := write(file, want)
				wrote := false
				m := secret.Migration{From: file, To: s3, Timeout: time.Minute, Progress: func(secret.RecordKey, string) {
					if !wrote {
						wrote = true
						if err := file.Put(ctx, late); err != nil {
							t.Fatal(err)
						}
					}
				}}
				if _, err := m.Run(ctx); !errors.Is(err, secret.ErrSourceChanged) {
					t.Fatalf("err = %v, want %v", err, secret.ErrSourceChanged)
				}
				report, err := secret.Migration{From: file, To: s3, Timeout: time.Minute}.Run(ctx)
				if err != nil || !report.Resumed {
					t.Fatalf("report %+v, %v", report, err)
				}
				var all []*corev1.Secret
				c, err := file.Contents(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, key := range c.Records {
					sec, err := file.Get(ctx, key.Namespace, key.Name)
					if err != nil {
						t.Fatal(err)
					}
					all = append(all, sec)
				}
				holdsExactly(t, s3, all)
			})
		}
	})
}

func TestAMigrationRefusesATargetThatHoldsOtherData(t *testing.T) {
	ctx := context.Background()
	cases := map[string]struct {
		// target prepares the target from the source.
		target func(t *testing.T, source secret.Migratable) secret.Migratable
		want   string
	}{
		"a bucket holding another program's objects": {
			target: func(t *testing.T, _ secret.Migratable) secret.Migratable {
				s, objects := s3Store(t)
				objects.write("README.md", []byte("not a secret"))
				return s
			},
			want: "holds 1 objects that are not secret store records (README.md)",
		},
		"a store in use, with an identity and records of its own": {
			target: func(t *testing.T, _ secret.Migratable) secret.Migratable {
				s, _ := s3Store(t)
				records(t, s)
				if _, err := s.Identity(ctx); err != nil {
					t.Fatal(err)
				}
				return s
			},
			want: "is a store of its own (identity",
		},
		"a store in use that holds no record yet": {
			target: func(t *testing.T, _ secret.Migratable) secret.Migratable {
				s, _ := s3Store(t)
				if _, err := s.Identity(ctx); err != nil {
					t.Fatal(err)
				}
				return s
			},
			want: "is a store of its own",
		},
		"a store filled from another store": {
			target: func(t *testing.T, _ secret.Migratable) secret.Migratable {
				other := newFileStore(t)
				records(t, other)
				s, _ := s3Store(t)
				if _, err := (secret.Migration{From: other, To: s}).Run(ctx); err != nil {
					t.Fatal(err)
				}
				return s
			},
			want: "was filled from another store",
		},
		"the source store itself": {
			target: func(_ *testing.T, source secret.Migratable) secret.Migratable { return source },
			want:   "is the source store itself",
		},
	}
	for name, tc := range cases {
		t.Run(name+" is refused and left as it was", func(t *testing.T) {
			source := newFileStore(t)
			records(t, source)
			if _, err := source.Identity(ctx); err != nil {
				t.Fatal(err)
			}
			target := tc.target(t, source)
			before, err := target.Contents(ctx)
			if err != nil {
				t.Fatal(err)
			}
			_, err = secret.Migration{From: source, To: target}.Run(ctx)
			var refused *secret.MigrationRefusedError
			if !errors.As(err, &refused) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("migration returned %v, want a refusal saying %q", err, tc.want)
			}
			if after, _ := target.Contents(ctx); !reflect.DeepEqual(before, after) {
				t.Fatalf("the target changed: %+v, was %+v", after, before)
			}
		})
	}
}
