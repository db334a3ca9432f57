package secrettest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"cloud.google.com/go/storage"
	"github.com/fsouza/fake-gcs-server/fakestorage"
	"golang.org/x/oauth2/google"
	"google.golang.org/api/option"
)

// ClientWithDeletePreconditions is a real storage client of the fake server that, unlike the
// fake alone, honours ifGenerationMatch on object deletes as Cloud Storage does (412 when the
// live object has another generation). The fake ignores that parameter on deletes, so without
// this a test could not tell a conditional delete from an unconditional one.
func ClientWithDeletePreconditions(server *fakestorage.Server) *storage.Client {
	rt := &deletePreconditions{server: server, next: server.HTTPClient().Transport}
	client, err := storage.NewClient(context.Background(),
		option.WithHTTPClient(&http.Client{Transport: rt}), option.WithCredentials(&google.Credentials{}))
	if err != nil {
		panic(err)
	}
	return client
}

type deletePreconditions struct {
	server *fakestorage.Server
	next   http.RoundTripper
}

func (d *deletePreconditions) RoundTrip(req *http.Request) (*http.Response, error) {
	if !staleDelete(d.server, req) {
		return d.next.RoundTrip(req)
	}
	return &http.Response{
		StatusCode: http.StatusPreconditionFailed,
		Status:     "412 Precondition Failed",
		Header:     http.Header{"Content-Type": []string{"application/json"}},
		Body:       io.NopCloser(bytes.NewBufferString(preconditionFailed)),
		Request:    req,
	}, nil
}

const preconditionFailed = `{"error":{"code":412,"message":"At least one of the pre-conditions you specified did not hold.","errors":[{"reason":"conditionNotMet"}]}}`

// staleDelete is an object delete whose ifGenerationMatch names another generation than the
// live object's.
func staleDelete(server *fakestorage.Server, req *http.Request) bool {
	want := req.URL.Query().Get("ifGenerationMatch")
	if req.Method != http.MethodDelete || want == "" {
		return false
	}
	// .../b/<bucket>/o/<object>, each part path-escaped.
	_, rest, ok := strings.Cut(req.URL.EscapedPath(), "/b/")
	bucketPart, objectPart, ok2 := strings.Cut(rest, "/o/")
	if !ok || !ok2 {
		return false
	}
	bucket, err1 := url.PathUnescape(bucketPart)
	object, err2 := url.PathUnescape(objectPart)
	gen, err3 := strconv.ParseInt(want, 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return false
	}
	live, err := server.GetObject(bucket, object)
	return err == nil && live.Generation != gen
}

// deletePreconditionsHandler is the same, for a server the client reaches over the network.
func deletePreconditionsHandler(server *fakestorage.Server, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !staleDelete(server, r) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusPreconditionFailed)
		_, _ = io.WriteString(w, preconditionFailed)
	})
}
