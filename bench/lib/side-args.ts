// The options of the benches beside the main one (`--cluster`, `--tokens`): --quick, --users N, --keep, --connections N.

export interface SideBenchArgs { quick: boolean; users: number; keep: boolean; connections: number }

export interface SideBenchDefaults {
  /** The argument that chose this bench (`--cluster`), passed over. */
  readonly flag: string;
  readonly users: number;
  /** Users with --quick, unless --users says otherwise. */
  readonly quickUsers: number;
  readonly connections: number;
  readonly usage: string;
}

export function parseSideBenchArgs(argv: readonly string[], d: SideBenchDefaults): SideBenchArgs {
  let quick = false;
  let keep = false;
  let users: number | undefined;
  let connections = d.connections;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === d.flag) continue;
    if (arg === '--quick') { quick = true; continue; }
    if (arg === '--keep') { keep = true; continue; }
    const value = argv[++i];
    if (arg === '--users' && value !== undefined) users = Number(value.replace(/_/g, ''));
    else if (arg === '--connections' && value !== undefined) connections = Number(value);
    else throw new Error(`unknown argument ${arg}; usage: ${d.usage}`);
  }
  users ??= quick ? d.quickUsers : d.users;
  if (!Number.isSafeInteger(users) || users < 1) throw new Error('--users must be a positive integer');
  if (!Number.isSafeInteger(connections) || connections < 1) throw new Error('--connections must be a positive integer');
  return { quick, users, keep, connections };
}
