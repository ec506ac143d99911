/*
 * Word error rate (docs/qa.md, "WER"): the recognised words (hypothesis) against the
 * corrected ones (reference), by a Levenshtein alignment on words. WER = (S + D + I) / N,
 * N the reference's words. Hand-written: an O(n·m) dynamic programme over two rows, each
 * cell carrying its substitutions, deletions and insertions, so the split is read off the
 * last cell without a backtrace (memory O(m)).
 */

/**
 * A text's words as WER compares them: Unicode NFKC, lower-case, apostrophes dropped
 * ("don't" is "dont"), every other punctuation mark or symbol a space, then split on
 * whitespace.
 */
export function normalisedWords(text: string): string[] {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/['\u2019\u02bc]/g, '')
    .replace(/[\p{P}\p{S}]/gu, ' ')
    .split(/\s+/)
    .filter((word) => word !== '');
}

export interface WerFigures {
  wer: number;
  substitutions: number;
  deletions: number;
  insertions: number;
  reference_words: number;
  hypothesis_words: number;
}

/**
 * The alignment of `hypothesis` to `reference` with the fewest edits. Among alignments of
 * equal cost a cell takes, in this order, the diagonal (a match or a substitution), a
 * deletion (a reference word missing), an insertion (an extra recognised word), so the
 * split of S, D and I is deterministic. `reference` must not be empty.
 */
export function wordErrorRate(reference: readonly string[], hypothesis: readonly string[]): WerFigures {
  const n = reference.length;
  const m = hypothesis.length;
  // Words as small integers: comparing numbers in the n·m loop is several times faster than strings.
  const ids = new Map<string, number>();
  const idOf = (word: string) => ids.get(word) ?? ids.set(word, ids.size).get(word)!;
  const ref = Int32Array.from(reference, idOf);
  const hyp = Int32Array.from(hypothesis, idOf);
  // Row i, column j: reference[0..i) aligned to hypothesis[0..j).
  let cost = new Int32Array(m + 1);
  let subs = new Int32Array(m + 1);
  let dels = new Int32Array(m + 1);
  let ins = new Int32Array(m + 1);
  for (let j = 0; j <= m; j++) {
    cost[j] = j;
    ins[j] = j;
  }
  let nextCost = new Int32Array(m + 1);
  let nextSubs = new Int32Array(m + 1);
  let nextDels = new Int32Array(m + 1);
  let nextIns = new Int32Array(m + 1);
  for (let i = 1; i <= n; i++) {
    nextCost[0] = i;
    nextSubs[0] = 0;
    nextDels[0] = i;
    nextIns[0] = 0;
    const word = ref[i - 1];
    for (let j = 1; j <= m; j++) {
      const same = word === hyp[j - 1] ? 0 : 1;
      const diagonal = cost[j - 1]! + same;
      const deletion = cost[j]! + 1;
      const insertion = nextCost[j - 1]! + 1;
      if (diagonal <= deletion && diagonal <= insertion) {
        nextCost[j] = diagonal;
        nextSubs[j] = subs[j - 1]! + same;
        nextDels[j] = dels[j - 1]!;
        nextIns[j] = ins[j - 1]!;
      } else if (deletion <= insertion) {
        nextCost[j] = deletion;
        nextSubs[j] = subs[j]!;
        nextDels[j] = dels[j]! + 1;
        nextIns[j] = ins[j]!;
      } else {
        nextCost[j] = insertion;
        nextSubs[j] = nextSubs[j - 1]!;
        nextDels[j] = nextDels[j - 1]!;
        nextIns[j] = nextIns[j - 1]! + 1;
      }
    }
    [cost, nextCost] = [nextCost, cost];
    [subs, nextSubs] = [nextSubs, subs];
    [dels, nextDels] = [nextDels, dels];
    [ins, nextIns] = [nextIns, ins];
  }
  const substitutions = subs[m]!;
  const deletions = dels[m]!;
  const insertions = ins[m]!;
  return {
    wer: Math.round(((substitutions + deletions + insertions) / n) * 10_000) / 10_000,
    substitutions,
    deletions,
    insertions,
    reference_words: n,
    hypothesis_words: m,
  };
}
