import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { buildWidget, WIDGET_OUTPUT } from '../../scripts/build-widget.ts';

describe('the checked-in widget', () => {
  it('is what web/widget/widget.ts builds to (run npm run build:widget after changing it)', async () => {
    expect(readFileSync(WIDGET_OUTPUT, 'utf8')).toBe(await buildWidget());
  });
});
