// Types of categories.mjs, for docs/samples/api-categories.test.ts.
import type ts from 'typescript';

export interface Category {
  readonly title: string;
  readonly description: string;
  readonly rules: readonly string[];
}

export interface ExportDescription {
  /** `<package>:<path under src>` of the declaration, undefined outside packages/<package>/src. */
  readonly location: string | undefined;
  readonly name: string;
  /** A class whose chain of base classes reaches Error. */
  readonly isError: boolean;
}

export declare const ERRORS: string;
export declare const CATEGORIES: readonly Category[];
export declare function ruleLocation(fileName: string): string | undefined;
export declare function categoryOf(
  described: ExportDescription & { readonly location: string },
): string | undefined;
export declare function isErrorClass(
  typescript: typeof ts,
  checker: ts.TypeChecker,
  symbol: ts.Symbol,
): boolean;
export declare function describeExport(
  typescript: typeof ts,
  checker: ts.TypeChecker,
  exported: ts.Symbol,
): ExportDescription;
