package config_test

import (
	"strings"
	"testing"

	"github.com/landlord-dev/landlord/internal/config"
)

// secrets.sharedSource is Store unless set, and Namespace only with a template namespace that is
// safe for another tool to feed.
func TestTheSharedSourceIsTheStoreUnlessAnotherToolFeedsASafeNamespace(t *testing.T) {
	cases := map[string]struct {
		document string
		want     config.SharedSource
		// refused names the field the error must name; "" when the document is valid.
		refused string
	}{
		"unset, Landlord mirrors the store as before": {
			document: "secrets: {}", want: config.SharedFromStore},
		"Store is accepted as written": {
			document: "secrets: {sharedSource: Store}", want: config.SharedFromStore},
		"Namespace lets another tool feed the template namespace": {
			document: "secrets: {sharedSource: Namespace}", want: config.SharedFromNamespace},
		"Namespace keeps the store for credentials, on any backend": {
			document: "secrets: {sharedSource: Namespace, store: {backend: url, url: {objects: 's3://bucket?region=eu-west-1', key: 'awskms://alias/landlord?region=eu-west-1'}}}",
			want:     config.SharedFromNamespace},
		"a value in the wrong case is refused, naming the field": {
			document: "secrets: {sharedSource: namespace}", refused: "secrets.sharedSource"},
		"a tool's name is not a source, and is refused naming the field": {
			document: "secrets: {sharedSource: ExternalSecrets}", refused: "secrets.sharedSource"},
		"Namespace in the operator's own namespace, beside the database admin credentials, is refused": {
			document: "secrets: {sharedSource: Namespace, templateNamespace: landlord-system}", refused: "secrets.templateNamespace"},
		"Namespace in a namespace a tenant could be given is refused": {
			document: "secrets: {sharedSource: Namespace, templateNamespace: tenant-templates}", refused: "secrets.templateNamespace"},
		"Namespace in a namespace another prefix's tenant could be given is refused": {
			document: "namespacePrefix: customer-\nsecrets: {sharedSource: Namespace, templateNamespace: customer-shared}", refused: "secrets.templateNamespace"},
		"Namespace in a namespace of its own is accepted under any prefix": {
			document: "namespacePrefix: customer-\nsecrets: {sharedSource: Namespace, templateNamespace: shared-secrets}", want: config.SharedFromNamespace},
		"Store in a namespace a tenant could be given is refused too: its admins could share Secrets with every tenant": {
			document: "secrets: {templateNamespace: tenant-templates}", refused: "secrets.templateNamespace"},
		"Store in the operator's own namespace is left as it was: the mirror writes it, and nothing there is labelled shared": {
			document: "secrets: {templateNamespace: landlord-system}", want: config.SharedFromStore},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := config.Parse([]byte(tc.document))
			if tc.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refused+":") {
					t.Fatalf("want an error naming %s, got %v", tc.refused, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Secrets.SharedSource != tc.want {
				t.Errorf("secrets.sharedSource = %q, want %q", c.Secrets.SharedSource, tc.want)
			}
		})
	}
}
