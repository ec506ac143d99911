/** Only the fields a caller actually sent (zod leaves absent optional fields undefined). */
export function definedFields<T extends object>(input: T): Partial<T> {
  return Object.fromEntries(Object.entries(input).filter(([, value]) => value !== undefined)) as Partial<T>;
}
