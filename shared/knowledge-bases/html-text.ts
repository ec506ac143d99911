/** The page's readable text and title (without scripts, styles and navigation); links are the caller's (the crawler) to take. */
export async function htmlText(html: string): Promise<{ title?: string; text: string }> {
  const { parse } = await import('node-html-parser');
  // The doctype and comments are not text (the parser would keep a doctype as a text node).
  const root = parse(html.replace(/<!doctype[^>]*>/gi, '').replace(/<!--[\s\S]*?-->/g, ''), { blockTextElements: { script: false, style: false, noscript: false, pre: true } });
  for (const node of root.querySelectorAll('script, style, noscript, nav, header, footer, template, svg')) node.remove();
  const title = root.querySelector('title')?.text.trim() || undefined;
  root.querySelector('head')?.remove();
  const text = root.structuredText
    .split('\n')
    .map((line) => line.replace(/\s+/g, ' ').trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  return { title, text };
}
