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
