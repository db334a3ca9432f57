package testenv

import (
	"k8s.io/client-go/tools/clientcmd"
)

// WriteServiceAccountKubeconfig writes to path the kubeconfig at from with every user
// impersonating the ServiceAccount user (system:serviceaccount:NAMESPACE:NAME) and the groups
// the API server gives a ServiceAccount's token: a process run with it holds exactly the RBAC an
// installer binds to that ServiceAccount, as the operator's pod would.
func WriteServiceAccountKubeconfig(from, path, namespace, name string) error {
	kc, err := clientcmd.LoadFromFile(from)
	if err != nil {
		return err
	}
	for _, user := range kc.AuthInfos {
		user.Impersonate = "system:serviceaccount:" + namespace + ":" + name
		user.ImpersonateGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}
	}
	return clientcmd.WriteToFile(*kc, path)
}
