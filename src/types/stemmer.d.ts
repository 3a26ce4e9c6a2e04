declare module 'stemmer' {
  /** Porter (1980) stemmer. */
  function stemmer(value: string): string;
  export = stemmer;
}
