/**
 * An UpdateExpression from the fields a caller sent: values are SET, nulls are REMOVEd
 * (restoring a server default), undefined fields are left alone.
 */
export function setOrRemove(changes: Record<string, unknown>) {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const sets: string[] = [];
  const removes: string[] = [];
  Object.entries(changes)
    .filter(([, value]) => value !== undefined)
    .forEach(([field, value], i) => {
      names[`#f${i}`] = field;
      if (value === null) {
        removes.push(`#f${i}`);
      } else {
        values[`:v${i}`] = value;
        sets.push(`#f${i} = :v${i}`);
      }
    });
  return {
    UpdateExpression: [sets.length ? `SET ${sets.join(', ')}` : '', removes.length ? `REMOVE ${removes.join(', ')}` : '']
      .join(' ')
      .trim(),
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: Object.keys(values).length ? values : undefined,
  };
}

/**
 * SET each field of `set` (its value as given, null included) and REMOVE each of `remove`,
 * under names `#s0…`, `#r0…` and values `:s0…`, which leave a caller's condition its own
 * names. `expression` is '' when there is nothing to change.
 */
export function setAndRemove(set: Record<string, unknown>, remove: readonly string[] = []) {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const sets = Object.entries(set).map(([field, value], i) => {
    names[`#s${i}`] = field;
    values[`:s${i}`] = value;
    return `#s${i} = :s${i}`;
  });
  const removes = remove.map((field, i) => {
    names[`#r${i}`] = field;
    return `#r${i}`;
  });
  const expression = [sets.length ? `SET ${sets.join(', ')}` : '', removes.length ? `REMOVE ${removes.join(', ')}` : ''].join(' ').trim();
  return { expression, names, values };
}

/**
 * A caller's fields as `set` (values) and `remove` (nulls, restoring a server default),
 * undefined fields left alone: what an entity's `setFields` takes. Empty when nothing changes.
 */
export function fieldChanges(fields: Record<string, unknown>): { set: Record<string, unknown>; remove: string[] } {
  const present = Object.entries(fields).filter(([, value]) => value !== undefined);
  return {
    set: Object.fromEntries(present.filter(([, value]) => value !== null)),
    remove: present.filter(([, value]) => value === null).map(([field]) => field),
  };
}
