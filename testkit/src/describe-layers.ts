/**
 * The layers test every package runs (its test/layers.test.ts), written once: each
 * package gives its layer list and a made-up set of imports its rules must refuse; the suite
 * checks that every source file is placed, imports only downward, resolves, and forms no cycle.
 * Exported as `@etcdkit/testkit/describe-layers` so that only those tests load the TypeScript
 * compiler (through `@etcdkit/testkit/layers`).
 *
 * @module @etcdkit/testkit/describe-layers
 */
import { describe, expect, it } from 'vitest';
import {
  type ImportEdge,
  importCycles,
  type LayerList,
  layering,
  sourceImports,
  unresolvedImports,
} from './layers.js';

/** What {@link describeLayers} checks of one package. */
export interface LayersSpec {
  /** The package's src/ directory. */
  readonly src: string;
  /** Its layers, top to bottom (see {@link LayerList}). */
  readonly layers: LayerList;
  /** At most this many files directly in src/, when given. */
  readonly mostFilesAtTop?: number;
  /**
   * Imports the list must refuse, and how: `upward` the ones reported as not running downward,
   * `cycles` the cycles found among them (each as `a -> b -> a`). Shows the rules can fail.
   */
  readonly refused: {
    readonly edges: readonly ImportEdge[];
    readonly upward: readonly string[];
    readonly cycles: readonly string[];
  };
}

/** A vitest suite named `title` that checks a package's source against its layer list. */
export function describeLayers(title: string, spec: LayersSpec): void {
  const { placed, upwardImports } = layering(spec.layers);

  describe(title, () => {
    const { files, edges } = sourceImports(spec.src);

    it('places every source file in a layer', () => {
      expect(files.filter((file) => !placed(file))).toEqual([]);
    });

    const most = spec.mostFilesAtTop;
    if (most !== undefined) {
      it(`keeps at most ${most} files directly in src/`, () => {
        expect(files.filter((file) => !file.includes('/')).length).toBeLessThanOrEqual(most);
      });
    }

    it('imports only from lower layers', () => {
      expect(upwardImports(edges)).toEqual([]);
    });

    it('has no import cycle', () => {
      expect(importCycles(edges)).toEqual([]);
    });

    it('resolves every relative import to a source file', () => {
      expect(unresolvedImports({ files, edges })).toEqual([]);
    });

    it('reports an upward or sideways import, and a cycle', () => {
      const { refused } = spec;
      expect(upwardImports(refused.edges)).toEqual(refused.upward);
      expect(importCycles(refused.edges)).toEqual(refused.cycles);
    });
  });
}
