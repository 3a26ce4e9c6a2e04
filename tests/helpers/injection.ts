/**
 * Script and markup in what a console page shows, caught in the page itself (SECURITY T57): a watch
 * installed before the console's first script records every element or attribute a payload could
 * bring and every Content-Security-Policy violation; pageState reads them back with the markers any
 * payload set. Both are handed to the browser as text (page.addInitScript, page.evaluate): they use
 * nothing from this module. Used by tests/browser/console-xss.test.ts and console-instances.test.ts.
 */

/**
 * Installed in every page and frame before its first script: records every element or attribute a
 * payload could bring (other than the console's own), at whatever moment it is inserted, and every
 * policy violation. A function given to the browser as text: it uses nothing from this file.
 */
export function watchForInjection(): void {
  const w = window as unknown as Record<string, unknown>;
  const inserted: string[] = [];
  const violations: string[] = [];
  const URL_ATTRIBUTES = /^(href|src|action|formaction|xlink:href|data|poster|background)$/;
  const risky = (el: Element): string | undefined => {
    const tag = el.tagName.toLowerCase();
    for (const a of Array.from(el.attributes)) {
      const name = a.name.toLowerCase();
      if (name.startsWith('on')) return `<${tag} ${name}>`;
      if (name === 'srcdoc') return `<${tag} srcdoc>`;
      if (URL_ATTRIBUTES.test(name) && /^(javascript|vbscript|data):/.test(a.value.replace(/[\s\u0000-\u001f]/g, '').toLowerCase())) return `<${tag} ${name}="${a.value}">`;
    }
    const attr = (name: string) => el.getAttribute(name) ?? '';
    if (tag === 'script') return attr('src') === '/console/app.js' ? undefined : `<script src="${attr('src')}">${(el.textContent ?? '').slice(0, 80)}`;
    if (['iframe', 'frame', 'object', 'embed', 'base', 'svg', 'math', 'template', 'style'].includes(tag)) return `<${tag}>`;
    if (tag === 'img') return el.classList.contains('picture') && attr('src').startsWith('/v1/pictures/') ? undefined : `<img src="${attr('src')}">`;
    if (tag === 'a' && el.hasAttribute('href') && !/^(#|\/(?!\/))/.test(attr('href'))) return `<a href="${attr('href')}">`;
    if (tag === 'link') return attr('href') === '/console/app.css' ? undefined : `<link href="${attr('href')}">`;
    if (tag === 'meta' && el.hasAttribute('http-equiv')) return '<meta http-equiv>';
    return undefined;
  };
  const check = (node: Node) => {
    if (node.nodeType !== Node.ELEMENT_NODE) return;
    const el = node as Element;
    for (const e of [el, ...Array.from(el.querySelectorAll('*'))]) {
      const found = risky(e);
      if (found) inserted.push(found);
    }
  };
  new MutationObserver((records) => {
    for (const r of records) {
      if (r.type === 'attributes') check(r.target);
      else r.addedNodes.forEach(check);
    }
  }).observe(document, { childList: true, subtree: true, attributes: true });
  document.addEventListener('securitypolicyviolation', (e) => {
    const seen = `${e.violatedDirective} ${e.blockedURI}`;
    violations.push(seen);
    // A frame's violation counts in the page: a payload's frame is the page's too.
    if (window !== window.top) (window.top as unknown as { __xssWatch?: { violations: string[] } }).__xssWatch?.violations.push(`in a frame: ${seen}`);
  });
  w.__xssWatch = { inserted, violations, scan: () => check(document.documentElement) };
}

/** What a page holds once it is shown: markers set, elements inserted, violations, bidirectional controls shown. */
export interface PageState {
  markers: string[];
  inserted: string[];
  violations: string[];
  bidi: string[];
  text: string;
}

export function pageState(): PageState {
  const w = window as unknown as Record<string, unknown> & { __xssWatch: { inserted: string[]; violations: string[]; scan: () => void } };
  w.__xssWatch.scan();
  const all = `${document.title}\n${document.body?.textContent ?? ''}`;
  const bidi = [...all.matchAll(/[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g)].map(
    (m) => `U+${m[0].codePointAt(0)!.toString(16).toUpperCase()} in "${all.slice(Math.max(0, m.index! - 20), m.index! + 20)}"`,
  );
  return {
    markers: Object.keys(window).filter((k) => k.startsWith('__xss_')),
    inserted: [...new Set(w.__xssWatch.inserted)],
    violations: w.__xssWatch.violations,
    bidi,
    text: document.body?.textContent ?? '',
  };
}
