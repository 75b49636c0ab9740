// Types of packages.mjs, for the TypeScript that imports it (test set-up).
export declare function hasCommand(command: string): boolean;
export declare function installed(packages: string[]): boolean;
export declare function ensureDebianPackages(packages: string[], why: string): void;
