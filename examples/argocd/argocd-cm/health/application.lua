-- Argo CD health of an Argo CD Application, for the app of apps: Argo CD no longer assesses
-- Applications itself, and without a check every child is Healthy at once, so the sync waves of
-- the root Application would not wait for the CRDs and the operator before the tenants.
-- A child is Progressing while a sync of it runs, Degraded when its last sync failed (a prune
-- refused at admission, say), and otherwise as healthy as Argo CD found its resources.
local hs = {}
if obj.status ~= nil and obj.status.operationState ~= nil then
  local op = obj.status.operationState
  if op.phase == "Running" or op.phase == "Terminating" then
    hs.status = "Progressing"
    hs.message = op.message or ""
    return hs
  end
  if op.phase == "Failed" or op.phase == "Error" then
    hs.status = "Degraded"
    hs.message = "the last sync failed: " .. (op.message or "")
    return hs
  end
end
if obj.status ~= nil and obj.status.health ~= nil and obj.status.health.status ~= nil then
  hs.status = obj.status.health.status
  hs.message = obj.status.health.message or ""
  return hs
end
hs.status = "Progressing"
hs.message = "Argo CD has not assessed this Application yet"
return hs
