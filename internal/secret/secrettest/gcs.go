package secrettest

import (
	"net"
	"net/http"
	"net/http/httptest"

	"github.com/fsouza/fake-gcs-server/fakestorage"
)

// StartGCS starts an in-memory Cloud Storage server holding the named, empty buckets. Its
// Client() is a real storage client.
func StartGCS(buckets ...string) (*fakestorage.Server, error) {
	server, err := fakestorage.NewServerWithOptions(fakestorage.Options{NoListener: true})
	if err != nil {
		return nil, err
	}
	for _, b := range buckets {
		server.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: b})
	}
	return server, nil
}

// GCSEmulator is an in-memory Cloud Storage server on a loopback port, behind a Hangable, as
// the Cloud Storage emulator is served: STORAGE_EMULATOR_HOST=<Host> points the Google client
// libraries, and so gs:// URLs, at it. Like Cloud Storage, it honours ifGenerationMatch on
// object deletes (see ClientWithDeletePreconditions).
type GCSEmulator struct {
	*fakestorage.Server
	*Hangable
	Host string
	http *httptest.Server
}

// StartGCSEmulator starts a server holding the named, empty buckets.
func StartGCSEmulator(buckets ...string) (*GCSEmulator, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	// The XML API (object reads) is routed by host: the server's own.
	server, err := fakestorage.NewServerWithOptions(fakestorage.Options{NoListener: true, PublicHost: listener.Addr().String()})
	if err != nil {
		listener.Close()
		return nil, err
	}
	for _, b := range buckets {
		server.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: b})
	}
	e := &GCSEmulator{Server: server, Hangable: newHangable(deletePreconditionsHandler(server, server.HTTPHandler())), Host: listener.Addr().String()}
	e.http = &httptest.Server{Listener: listener, Config: &http.Server{Handler: e.Hangable}}
	e.http.Start()
	return e, nil
}

// Stop lets hanging requests go and stops the server.
func (e *GCSEmulator) Stop() {
	e.SetHanging(false)
	e.http.Close()
	e.Server.Stop()
}
