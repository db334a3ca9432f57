package secrettest

import (
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
