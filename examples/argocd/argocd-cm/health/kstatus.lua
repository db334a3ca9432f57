-- Argo CD health of Landlord's kinds that report kstatus conditions and nothing else
-- (tenancy.landlord.dev/v1alpha1): argocd-cm holds this one script under each of their keys.
-- - TenantPool: Healthy while it holds spec.replicas Ready spares, Progressing while it fills.
-- - TenantClaim: Healthy once bound to a tenant, Progressing while it waits for a Ready spare or
--   for its pool (a claim never fails: a missing pool may yet be created, an empty one refills).
-- - DatabaseServer: Healthy while Landlord logs in to it, Degraded while it cannot (Stalled,
--   whatever the cause: its admin credentials, its spec, or an outage).
-- - TenantBackup, TenantRestore: Healthy once it succeeded, Progressing while it waits or its Job
--   runs, Degraded when it failed or is refused (Stalled).
-- - TenantBackupSchedule: Healthy while it runs as asked (suspended included), Degraded while its
--   spec.schedule does not parse (Stalled).
-- - DatabaseMove: Healthy once it succeeded, Progressing while it waits, copies, switches, drops
--   the old copy or rolls back, Degraded when it failed or is refused (Stalled), and while it
--   waits, switched, for a person to confirm it (Ready False, MoveUnconfirmed).
-- - TenantClass: Healthy once every tenant of it is Ready at its current revision (or the change
--   is for new tenants only), Progressing while a change reaches its tenants, Degraded while a
--   wave rollout is halted by a tenant the change stalls.
-- The status follows kstatus: Ready is always present, Reconciling and Stalled only while true,
-- and status.observedGeneration is the spec Landlord last acted on.
-- Argo CD runs custom checks without Lua's string library: only `..` builds messages.
local hs = {}

local function condition(type)
  if obj.status == nil or obj.status.conditions == nil then
    return nil
  end
  for _, c in ipairs(obj.status.conditions) do
    if c.type == type then
      return c
    end
  end
  return nil
end

local function says(c)
  return (c.reason or "") .. ": " .. (c.message or "")
end

local ready = condition("Ready")
local reconciling = condition("Reconciling")
local stalled = condition("Stalled")
local generation = obj.metadata.generation

-- A spec Landlord has not reached a verdict on yet: still on its way, whatever the conditions
-- said of the spec before.
if obj.status == nil or obj.status.observedGeneration ~= generation then
  hs.status = "Progressing"
  if reconciling ~= nil and reconciling.status == "True" and reconciling.observedGeneration == generation then
    hs.message = says(reconciling)
  else
    hs.message = "Landlord has not reconciled generation " .. generation .. " yet"
  end
  return hs
end

if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = says(stalled)
  return hs
end

if reconciling ~= nil and reconciling.status == "True" then
  hs.status = "Progressing"
  hs.message = says(reconciling)
  return hs
end

if ready ~= nil and ready.status == "True" then
  hs.status = "Healthy"
  hs.message = ready.message
  return hs
end

if ready ~= nil then
  hs.status = "Degraded"
  hs.message = says(ready)
  return hs
end

hs.status = "Progressing"
hs.message = "Landlord has not reported Ready yet"
return hs
