// The semantic cache's tuning pairs, as the judge's training reads them (scripts/install-semantic-judge.sh):
// JSON on stdout. The held-out sets are not read.
import { loadSets, pairsOf } from '../bench/lib/semantic-sets.ts';

process.stdout.write(`${JSON.stringify(pairsOf('tuning', loadSets(false).tune))}\n`);
