/**
 * An object that stands for the one `create` returns, created on first use (the first read,
 * write, `in` or key listing) and the same object after: what a module exports as a value
 * but need not build at import, so a Lambda's cold import stays cheap (docs/performance.md,
 * "zod at import"). With `bindMethods`, functions read from it run bound to the
 * real object (SDK clients, whose methods use `this`).
 */
export function onFirstUse<T extends object>(create: () => T, options: { bindMethods?: boolean } = {}): T {
  let created: T | undefined;
  const target = () => (created ??= create());
  return new Proxy({} as T, {
    get: (_stand, key) => {
      const real = target();
      const value: unknown = Reflect.get(real, key, real);
      return options.bindMethods && typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(real) : value;
    },
    set: (_stand, key, value) => Reflect.set(target(), key, value),
    has: (_stand, key) => Reflect.has(target(), key),
    ownKeys: () => Reflect.ownKeys(target()),
    // Reported configurable: a proxy may not report a non-configurable property its own (empty) target lacks.
    getOwnPropertyDescriptor: (_stand, key) => {
      const descriptor = Reflect.getOwnPropertyDescriptor(target(), key);
      return descriptor && { ...descriptor, configurable: true };
    },
    getPrototypeOf: () => Reflect.getPrototypeOf(target()),
  });
}

/**
 * Something loaded on first use, once per process (a module through `import()`, usually): every
 * caller shares the first load, and a load that fails is forgotten, so the next call tries
 * again instead of failing for the life of the process. Keep the `import('…')` literal inside
 * `load`: esbuild puts a module in a chunk that a cold start does not load only when it sees
 * the literal (lib/bundling.ts).
 */
export function loadOnce<T>(load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () =>
    (loading ??= load().catch((error: unknown) => {
      loading = undefined;
      throw error;
    }));
}
