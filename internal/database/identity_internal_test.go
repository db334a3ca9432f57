package database

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	cause := &ForeignError{Object: "login", Name: "x"}
	err := fmt.Errorf(`Error 1064: near 'IDENTIFIED BY 's3cr3t' WITH' at line 1: %w`, cause)

	t.Run("a password quoted in an error is replaced", func(t *testing.T) {
		got := redact(err, "s3cr3t")
		if strings.Contains(got.Error(), "s3cr3t") || !strings.Contains(got.Error(), "[redacted]") {
			t.Errorf("got %q", got)
		}
		if wrapped := fmt.Errorf("creating user: %w", got); strings.Contains(wrapped.Error(), "s3cr3t") {
			t.Errorf("wrapping brings the password back: %q", wrapped)
		}
	})
	t.Run("the cause is still found", func(t *testing.T) {
		var foreign *ForeignError
		if !errors.As(redact(err, "s3cr3t"), &foreign) {
			t.Error("errors.As lost the cause")
		}
	})
	t.Run("an error without secrets is returned as it is", func(t *testing.T) {
		if got := redact(err, "other", ""); got != err {
			t.Errorf("got %v", got)
		}
	})
}

func TestSCRAMVerifier(t *testing.T) {
	// RFC 7677's test vector: user "user", password "pencil", salt W22ZaJ0SNY7soEsUEjb6gQ==,
	// 4096 iterations.
	salt := []byte{0x5b, 0x6d, 0x99, 0x68, 0x9d, 0x12, 0x35, 0x8e, 0xec, 0xa0, 0x4b, 0x14, 0x12, 0x36, 0xfa, 0x81}
	got, err := scramVerifierWithSalt("pencil", salt)
	if err != nil {
		t.Fatal(err)
	}
	const want = "SCRAM-SHA-256$4096:W22ZaJ0SNY7soEsUEjb6gQ==$WG5d8oPm3OtcPnkdi4Uo7BkeZkBFzpcXkuLmtbsT4qY=:wfPLwcE6nTWhTAmQ7tl2KeoiWGPlZqQxSrmfPwDl2dU="
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
