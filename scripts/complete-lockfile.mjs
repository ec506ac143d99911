#!/usr/bin/env node
// Completes package-lock.json with the platform-specific optional packages that the npm
// registry mirror on our build machines does not carry (most of rollup's native
// binaries). `npm install` then leaves them out of the lock and `npm ci` refuses the lock
// as out of sync. Each added entry carries its os/cpu/libc, exactly as npm writes them
// with full registry access, so `npm ci` skips it on every other platform and fetches it
// by version on the matching one. Run after changing dependencies:
//   npm install && node scripts/complete-lockfile.mjs
/* global URL, console */
import { readFileSync, writeFileSync } from 'node:fs';

const LOCK = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(LOCK, 'utf8'));
const packages = lock.packages;

const OS = ['android', 'darwin', 'freebsd', 'linux', 'openbsd', 'openharmony', 'sunos', 'aix', 'netbsd', 'win32'];
const CPU = ['arm64', 'arm', 'x64', 'ia32', 'loong64', 'ppc64', 'riscv64', 's390x', 'mips64el'];

/** `@rollup/rollup-linux-arm-musleabihf` → { os: linux, cpu: arm, libc: musl }. */
function platformOf(name) {
  const parts = name.split('/').pop().split('-');
  const os = parts.find((part) => OS.includes(part));
  const cpu = parts.find((part) => CPU.includes(part));
  if (!os || !cpu) return undefined;
  const abi = parts.slice(parts.indexOf(cpu) + 1).join('-');
  const libc = os === 'linux' ? (abi.startsWith('musl') ? 'musl' : 'glibc') : undefined;
  return { os, cpu, libc };
}

let added = 0;
for (const [path, entry] of Object.entries(packages)) {
  for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const target = `node_modules/${name}`;
    if (packages[target] || packages[`${path}/node_modules/${name}`]) continue;
    const platform = platformOf(name);
    if (!platform) {
      console.error(`not a platform package, left alone: ${name} (wanted by ${path || 'the root'})`);
      continue;
    }
    packages[target] = {
      version,
      cpu: [platform.cpu],
      ...(entry.dev ? { dev: true } : {}),
      ...(platform.libc ? { libc: [platform.libc] } : {}),
      ...(entry.license ? { license: entry.license } : {}),
      optional: true,
      os: [platform.os],
    };
    added++;
  }
}

lock.packages = Object.fromEntries(
  Object.entries(packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))),
);
writeFileSync(LOCK, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`package-lock.json: added ${added} platform package entries`);
