package secrettest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	localkmsconfig "github.com/nsmithuk/local-kms/src/config"
	"github.com/nsmithuk/local-kms/src/data"
	"github.com/nsmithuk/local-kms/src/handler"
	"github.com/sirupsen/logrus"
)

// AWSKMS is Local KMS (github.com/nsmithuk/local-kms), an implementation of the AWS KMS API
// over HTTP, run in this process on a loopback port. Keys live in a LevelDB under dir.
type AWSKMS struct {
	*Hangable
	server *httptest.Server
	db     *data.Database
}

// Local KMS keeps its account and region in package variables: every server in the process
// shares them.
var localKMSOnce sync.Once

// AWSKMSRegion is the region of every Local KMS server, and of the ARNs of its keys.
const AWSKMSRegion = "eu-west-2"

// StartAWSKMS starts a server keeping its keys in dir.
func StartAWSKMS(dir string) *AWSKMS {
	localKMSOnce.Do(func() {
		localkmsconfig.AWSAccountId = "111122223333"
		localkmsconfig.AWSRegion = AWSKMSRegion
	})
	k := &AWSKMS{db: data.NewDatabase(dir)}
	k.Hangable = newHangable(http.HandlerFunc(k.serve))
	k.server = httptest.NewServer(k.Hangable)
	return k
}

// quiet is Local KMS's logger with only its warnings, which say why a request was refused.
var quiet = func() *logrus.Logger {
	l := logrus.New()
	l.SetLevel(logrus.WarnLevel)
	return l
}()

// serve routes a request to Local KMS's handler of its X-Amz-Target (TrentService.Encrypt is
// RequestHandler.Encrypt), as Local KMS's own server does, with a quieter logger.
func (k *AWSKMS) serve(w http.ResponseWriter, r *http.Request) {
	_, operation, _ := strings.Cut(r.Header.Get("X-Amz-Target"), ".")
	method := reflect.ValueOf(handler.NewRequestHandler(r, quiet, k.db)).MethodByName(operation)
	if r.Method != http.MethodPost || !method.IsValid() {
		w.WriteHeader(http.StatusNotImplemented)
		return
	}
	response, ok := method.Call(nil)[0].Interface().(handler.Response)
	if !ok {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(response.Code)
	_, _ = w.Write([]byte(response.Body))
}

// CreateKey creates a symmetric key through the KMS API, as an administrator would, and returns
// its key URL (awskms:///ARN?...).
func (k *AWSKMS) CreateKey(ctx context.Context) (string, error) {
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(AWSKMSRegion))
	if err != nil {
		return "", err
	}
	client := kms.NewFromConfig(cfg, func(o *kms.Options) { o.BaseEndpoint = aws.String(k.server.URL) })
	out, err := client.CreateKey(ctx, &kms.CreateKeyInput{Description: aws.String("landlord secret store")})
	if err != nil {
		return "", err
	}
	return k.KeyURL(*out.KeyMetadata.Arn), nil
}

// KeyURL is the key URL of a key of this server, by ID or ARN.
func (k *AWSKMS) KeyURL(key string) string {
	q := url.Values{"endpoint": {k.server.URL}, "region": {AWSKMSRegion}}
	return "awskms:///" + key + "?" + q.Encode()
}

// Close lets hanging requests go and stops the server.
func (k *AWSKMS) Close() {
	k.SetHanging(false)
	k.server.Close()
	k.db.Close()
}
