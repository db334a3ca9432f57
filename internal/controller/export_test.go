package controller

// Renderings is how many component renderings the reconciler keeps: tests check that none
// outlives its component or its tenant.
func (r *TenantReconciler) Renderings() int { return r.rendered.Len() }
