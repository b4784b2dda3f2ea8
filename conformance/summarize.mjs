// Summarizes the results of the conformance runner for scripts/conformance:
//
//   node summarize.mjs SCENARIOS CORE-DIR ALL-DIR SDK-BASELINE KNOWN-FAILURES STRICT
//
// SCENARIOS is the output of `conformance list --client`; CORE-DIR and
// ALL-DIR are the runner's output directories for --suite core and
// --suite all. A scenario passes when it recorded no FAILURE check. It
// prints the counts and exits 1 when a core scenario fails, an auth
// scenario fails that the SDK's baseline does not expect to, another
// scenario fails, or a scenario ran no checks file at all; failures listed
// in KNOWN-FAILURES are allowed unless STRICT is 1, and one of them that
// passes is an error (the list must shrink).
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import YAML from 'yaml';

const [scenariosFile, coreDir, allDir, baselineFile, knownFile, strictArg] = process.argv.slice(2);
const strict = strictArg === '1';
const listed = readFileSync(scenariosFile, 'utf8').split('\n')
  .map((l) => l.match(/^\s+- (\S+)/)).filter(Boolean).map((m) => m[1]);
const baseline = new Set(YAML.parse(readFileSync(baselineFile, 'utf8'))?.client ?? []);
const known = new Set(YAML.parse(readFileSync(knownFile, 'utf8'))?.client ?? []);

// results reads DIR/<scenario>-<timestamp>/checks.json (scenario names may
// hold a slash: auth/x is DIR/auth/x-<timestamp>).
function results(dir) {
  const out = new Map();
  const walk = (d, prefix) => {
    for (const ent of readdirSync(d, { withFileTypes: true })) {
      if (!ent.isDirectory()) continue;
      const p = join(d, ent.name);
      const m = ent.name.match(/^(.*)-\d{4}-\d\d-\d\dT[\d-]+Z$/);
      if (m && existsSync(join(p, 'checks.json'))) {
        const checks = JSON.parse(readFileSync(join(p, 'checks.json'), 'utf8'));
        const failed = checks.filter((c) => c.status === 'FAILURE');
        out.set(prefix + m[1], { passed: checks.filter((c) => c.status === 'SUCCESS').length, failed });
      } else if (!m) {
        walk(p, prefix + ent.name + '/');
      }
    }
  };
  if (existsSync(dir)) walk(dir, '');
  return out;
}

const core = results(coreDir);
const all = results(allDir);
const problems = [];
if (core.size === 0) problems.push('the core suite ran no scenario');
for (const name of listed) if (!all.has(name)) problems.push(`${name}: no result (the runner did not run it)`);

function judge(name, r, allowed) {
  if (r.failed.length === 0) {
    if (known.has(name)) problems.push(`${name} passes now: remove it from conformance/known-failures.yml`);
    return 'pass';
  }
  if (allowed) return 'expected';
  if (known.has(name) && !strict) return 'known';
  const first = r.failed[0];
  problems.push(`${name}: ${r.failed.length} check(s) failed, e.g. ${first.id}: ${first.errorMessage ?? first.description}`);
  return 'fail';
}

function line(label, entries, allowedFn) {
  const tally = { pass: 0, expected: 0, known: 0, fail: 0 };
  const names = { expected: [], known: [], fail: [] };
  let passed = 0, failedChecks = 0;
  for (const [name, r] of entries) {
    const v = judge(name, r, allowedFn(name));
    tally[v]++;
    if (v !== 'pass') names[v].push(name);
    passed += r.passed;
    failedChecks += r.failed.length;
  }
  let s = `${label}: ${tally.pass}/${entries.length} scenarios pass (checks: ${passed} passed, ${failedChecks} failed)`;
  if (tally.expected) s += `; ${tally.expected} expected to fail by the SDK's baseline`;
  if (tally.known) s += `; ${tally.known} known failures (conformance/known-failures.yml)`;
  if (tally.fail) s += `; ${tally.fail} FAIL: ${names.fail.join(', ')}`;
  console.log(s);
}

const sorted = (m, f) => [...m].filter(([n]) => f(n)).sort(([a], [b]) => a.localeCompare(b));
line('core', sorted(core, () => true), () => false);
line('auth', sorted(all, (n) => n.startsWith('auth/')), (n) => baseline.has(n));
line('other', sorted(all, (n) => !n.startsWith('auth/') && !core.has(n)), () => false);
const unique = [...new Set(problems)];
for (const p of unique) console.log(`  ${p}`);
console.log(unique.length ? 'conformance: FAILED' : 'conformance: ok');
process.exit(unique.length ? 1 : 0);
