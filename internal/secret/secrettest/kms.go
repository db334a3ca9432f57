// Package secrettest runs in-process stand-ins for Google Cloud KMS and Cloud Storage that the
// real Google client libraries talk to, so the store is tested through the same code paths it
// uses in production.
package secrettest

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"hash/crc32"
	"net"
	"sync"

	kms "cloud.google.com/go/kms/apiv1"
	"cloud.google.com/go/kms/apiv1/kmspb"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// KMS is a gRPC Cloud KMS server with Encrypt and Decrypt, each CryptoKey an AES-256-GCM key
// that never leaves it, checking and filling the CRC32C fields as the real service does.
type KMS struct {
	kmspb.UnimplementedKeyManagementServiceServer
	mu     sync.Mutex
	keys   map[string]cipher.AEAD
	denied map[string]bool
	down   bool

	server   *grpc.Server
	listener *bufconn.Listener
}

// StartKMS starts a fake KMS that knows the named CryptoKeys.
func StartKMS(keyNames ...string) *KMS {
	k := &KMS{keys: map[string]cipher.AEAD{}, denied: map[string]bool{}, server: grpc.NewServer(), listener: bufconn.Listen(1 << 20)}
	for _, n := range keyNames {
		key := make([]byte, 32)
		_, _ = rand.Read(key)
		block, _ := aes.NewCipher(key)
		k.keys[n], _ = cipher.NewGCM(block)
	}
	kmspb.RegisterKeyManagementServiceServer(k.server, k)
	go func() { _ = k.server.Serve(k.listener) }()
	return k
}

// Client is a real Cloud KMS client connected to the fake.
func (k *KMS) Client(ctx context.Context) (*kms.KeyManagementClient, error) {
	conn, err := grpc.NewClient("passthrough:///fake-kms",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return k.listener.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	return kms.NewKeyManagementClient(ctx, option.WithGRPCConn(conn))
}

// SetDown makes every call fail as an unreachable service does.
func (k *KMS) SetDown(down bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.down = down
}

// Deny makes every call with the named key fail as one without IAM permission on it does.
func (k *KMS) Deny(keyName string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.denied[keyName] = true
}

// Stop stops the server.
func (k *KMS) Stop() { k.server.Stop() }

func (k *KMS) key(name string) (cipher.AEAD, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.down {
		return nil, status.Error(codes.Unavailable, "the service is currently unavailable")
	}
	if k.denied[name] {
		return nil, status.Errorf(codes.PermissionDenied, "Permission 'cloudkms.cryptoKeyVersions.useToEncrypt' denied on resource '%s' (or it may not exist).", name)
	}
	key, ok := k.keys[name]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "CryptoKey %s not found", name)
	}
	return key, nil
}

func checksumOK(data []byte, sum *wrapperspb.Int64Value) bool {
	return sum == nil || sum.GetValue() == int64(crc32.Checksum(data, castagnoli))
}

func checksum(data []byte) *wrapperspb.Int64Value {
	return wrapperspb.Int64(int64(crc32.Checksum(data, castagnoli)))
}

// Encrypt seals the plaintext under the named key.
func (k *KMS) Encrypt(_ context.Context, req *kmspb.EncryptRequest) (*kmspb.EncryptResponse, error) {
	key, err := k.key(req.GetName())
	if err != nil {
		return nil, err
	}
	if !checksumOK(req.GetPlaintext(), req.GetPlaintextCrc32C()) || !checksumOK(req.GetAdditionalAuthenticatedData(), req.GetAdditionalAuthenticatedDataCrc32C()) {
		return nil, status.Error(codes.InvalidArgument, "checksum mismatch")
	}
	nonce := make([]byte, key.NonceSize())
	_, _ = rand.Read(nonce)
	ct := key.Seal(nonce, nonce, req.GetPlaintext(), req.GetAdditionalAuthenticatedData())
	return &kmspb.EncryptResponse{
		Name: req.GetName(), Ciphertext: ct, CiphertextCrc32C: checksum(ct),
		VerifiedPlaintextCrc32C:                   req.GetPlaintextCrc32C() != nil,
		VerifiedAdditionalAuthenticatedDataCrc32C: req.GetAdditionalAuthenticatedDataCrc32C() != nil,
	}, nil
}

// Decrypt opens a ciphertext sealed under the named key.
func (k *KMS) Decrypt(_ context.Context, req *kmspb.DecryptRequest) (*kmspb.DecryptResponse, error) {
	key, err := k.key(req.GetName())
	if err != nil {
		return nil, err
	}
	if !checksumOK(req.GetCiphertext(), req.GetCiphertextCrc32C()) {
		return nil, status.Error(codes.InvalidArgument, "checksum mismatch")
	}
	ct := req.GetCiphertext()
	if len(ct) < key.NonceSize() {
		return nil, status.Error(codes.InvalidArgument, "Decryption failed: the ciphertext is invalid.")
	}
	plain, err := key.Open(nil, ct[:key.NonceSize()], ct[key.NonceSize():], req.GetAdditionalAuthenticatedData())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, "Decryption failed: verify that 'name' refers to the correct CryptoKey.")
	}
	return &kmspb.DecryptResponse{Plaintext: plain, PlaintextCrc32C: checksum(plain)}, nil
}
