// Shared by the suites: the tiers to cover and a unique run id for metadata filters.
// E2bNodeTest sets E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY (a tenant token of the daemon it started),
// PADDOCK_E2B_OTHER_KEY (another tenant's token) and PADDOCK_E2B_RUNTIMES (the tiers, e.g. "runc,runsc").
export const runtimes = (process.env.PADDOCK_E2B_RUNTIMES || 'runc').split(',').filter(Boolean)
export const runId = `r${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`
export const otherKey = process.env.PADDOCK_E2B_OTHER_KEY

/** Metadata that picks the tier, and tags the sandbox with this run. */
export function meta(runtime, extra = {}) {
  return { 'paddock.io/runtime': runtime, suite: runId, ...extra }
}

/** Expects fn to reject with an error whose name is one of names; returns it. */
export async function rejectsWith(fn, names, assert) {
  try {
    await fn()
  } catch (e) {
    assert.ok(names.includes(e.name), `expected ${names.join(' or ')}, got ${e.name}: ${e.message}`)
    return e
  }
  assert.fail(`expected ${names.join(' or ')}, but it succeeded`)
}
