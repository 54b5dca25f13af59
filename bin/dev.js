#!/usr/bin/env -S node --import tsx --no-warnings=ExperimentalWarning
// Development: the commands of this package run from the TypeScript sources (through tsx),
// without a build. Help for the whole CLI and the commands of the oclif plugins need the build.
import { run } from '../src/main/cli.ts';

await run(new URL('..', import.meta.url));
