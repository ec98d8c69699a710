// Generated from paddockd's OpenAPI document by appliance/openapi; do not edit.
// Regenerate: go test ./appliance/server -run TestSDKModels -update

export interface Agent {
  command: string[] | null;
  name: string;
  required?: string[] | null;
  secrets?: string[] | null;
}

export interface ApplyRequest {
  destroy?: boolean;
  drives?: boolean;
  serial: number;
  spec: ProjectSpec;
}

export interface ApplyResult {
  done: string[] | null;
  failed?: Record<string, string> | null;
  plan: Plan;
  serial: number;
  setup?: string[] | null;
}

export interface AttrChange {
  after?: string;
  before?: string;
  forces?: boolean;
  name: string;
}

export interface AuditBreak {
  reason: string;
  seq: number;
}

export interface AuditCheck {
  broken?: AuditBreak;
  entries: number;
  first: number;
  head?: AuditMark;
  last: number;
  ok: boolean;
  witnesses?: string[] | null;
}

export interface AuditEntry {
  action: string;
  addr?: string;
  agent?: string;
  at: string;
  box?: string;
  box_owner?: string;
  detail?: unknown;
  hash: string;
  object?: string;
  prev: string;
  result: string;
  seq: number;
  user?: string;
  via?: string;
}

export interface AuditMark {
  hash: string;
  seq: number;
}

export interface Box {
  access?: string;
  agent?: string;
  broker?: BrokerUse[] | null;
  buckets?: BucketMount[] | null;
  cpus: number;
  created: string;
  desired: string;
  desktop?: boolean;
  desktop_state?: string;
  docker?: string;
  env?: Record<string, string> | null;
  error?: string;
  expires_at?: string;
  from?: string;
  idle_stop?: string;
  image: string;
  ip?: string;
  labels?: Record<string, string> | null;
  memory_mib: number;
  mounts?: Mount[] | null;
  name: string;
  node?: string;
  node_labels?: Record<string, string> | null;
  note?: string;
  oom_at?: string;
  oom_kills?: number;
  owner?: string;
  policy?: string;
  project?: string;
  setup?: string;
  sleeping?: boolean;
  status: string;
  ttl_seconds?: number;
  type: string;
}

export interface BoxAgent {
  credentials: string;
  hint?: string;
  installed: boolean;
  missing?: string[] | null;
  name: string;
}

export interface BoxMetrics {
  box: string;
  interval: string;
  samples: Sample[] | null;
}

export interface BoxPost {
  buckets?: BucketMount[] | null;
  desktop?: boolean;
  env?: Record<string, string> | null;
  idle_stop?: string;
  image?: string;
  labels?: Record<string, string> | null;
  mounts?: Mount[] | null;
  name?: string;
  node?: string;
  node_labels?: Record<string, string> | null;
  policy?: string;
  ttl?: string;
  type?: string;
}

export interface BoxSpec {
  agent?: string;
  buckets?: BucketMount[] | null;
  desktop?: boolean;
  env?: Record<string, string> | null;
  idle_stop?: string;
  image?: string;
  labels?: Record<string, string> | null;
  mounts?: Mount[] | null;
  name: string;
  node_labels?: Record<string, string> | null;
  policy?: string;
  push?: PushSpec[] | null;
  setup?: string[] | null;
  ttl?: string;
  type?: string;
}

export interface BrokerUse {
  bytes_down: number;
  bytes_up: number;
  last?: string;
  last_status?: number;
  refused: number;
  requests: number;
  secret: string;
  status?: Record<string, number> | null;
}

export interface BucketMount {
  endpoint?: string;
  read_only?: boolean;
  region?: string;
  secret: string;
  to: string;
  url: string;
}

export interface BuildEvent {
  code?: string;
  image?: Image;
  message?: string;
  text?: string;
  type: string;
}

export interface Change {
  action: string;
  address: string;
  attrs?: AttrChange[] | null;
  reasons?: string[] | null;
}

export interface CodeContext {
  kernel: string;
  lang: string;
  name: string;
  started: string;
  state: string;
}

export interface ContextPost {
  lang?: string;
  name?: string;
}

export interface DNSDecision {
  allowed: boolean;
  name: string;
  reason: string;
  time: string;
}

export interface DesktopAction {
  action: string;
  coordinate?: number[] | null;
  duration?: number;
  region?: number[] | null;
  scroll_amount?: number;
  scroll_direction?: string;
  start_coordinate?: number[] | null;
  target?: string;
  text?: string;
}

export interface DesktopActionResult {
  action: string;
  coordinate?: number[] | null;
  idle?: boolean;
  image?: string;
  windows?: DesktopWindow[] | null;
}

export interface DesktopActionsPost {
  actions: DesktopAction[] | null;
  scale?: number;
  screenshot?: boolean;
}

export interface DesktopActionsResult {
  height: number;
  results: DesktopActionResult[] | null;
  screenshot?: string;
  width: number;
}

export interface DesktopTicket {
  expires: string;
  path: string;
  ticket: string;
  view_only?: boolean;
}

export interface DesktopWindow {
  active?: boolean;
  height: number;
  id: string;
  title: string;
  width: number;
  x: number;
  y: number;
}

export interface DeviceCode {
  device_code: string;
  expires_in: number;
  interval: number;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
}

export interface DevicePost {
  name?: string;
}

export interface DeviceToken {
  token: string;
}

export interface DeviceTokenPost {
  device_code: string;
}

export interface Dir {
  entries: DirEntry[] | null;
  path: string;
  truncated?: boolean;
}

export interface DirEntry {
  modified: string;
  name: string;
  size: number;
  target?: string;
  type: string;
}

export interface Drained {
  moved: MovedBox[] | null;
  node: string;
}

export interface Drive {
  created: string;
  labels?: Record<string, string> | null;
  name: string;
  node?: string;
  project?: string;
  size?: string;
  state: string;
  used_by?: string[] | null;
}

export interface DrivePost {
  name: string;
}

export interface DriveSpec {
  labels?: Record<string, string> | null;
  name: string;
  size?: string;
}

export interface Error {
  error: string;
  field?: string;
  message: string;
}

export interface ExecPost {
  cmd: string[] | null;
  cols?: number;
  desktop?: boolean;
  env?: Record<string, string> | null;
  rows?: number;
  stdin?: boolean;
  timeout?: string;
  tty?: boolean;
  workdir?: string;
}

export interface ForkPost {
  name?: string;
  node?: string;
  snapshot?: string;
}

export interface Grant {
  access: string;
  user: string;
}

export interface GrantPut {
  access?: string;
}

export interface Group {
  members: GroupMember[] | null;
  name: string;
  quota: QuotaPut;
}

export interface GroupMember {
  source: string;
  user: string;
}

export interface Image {
  bases: string[] | null;
  build_seconds: number;
  built: string;
  cached?: boolean;
  context_digest: string;
  dockerfile: string;
  id: string;
  mine: boolean;
  name: string;
  owner: string;
  project?: string;
  ref: string;
  shared_with: string[] | null;
  size: number;
}

export interface ImageShares {
  everyone: boolean;
  groups: string[] | null;
  users: string[] | null;
}

export interface ImageSpec {
  context: string;
  context_digest?: string;
  dockerfile: string;
  name: string;
  policy?: string;
  tag: string;
}

export interface Invite {
  by?: string;
  created: string;
  expires: string;
  id: string;
  role: string;
}

export interface InviteCreated {
  expires: string;
  id: string;
  role: string;
  token: string;
  url?: string;
}

export interface InvitePost {
  role?: string;
}

export interface Job {
  box: string;
  cmd: string[] | null;
  ended?: string;
  exit_code?: number;
  id: string;
  started: string;
  state: string;
}

export interface JobInput {
  bytes: number;
  closed: boolean;
}

export interface Key {
  created: string;
  fingerprint: string;
  name: string;
  type: string;
}

export interface KeyPost {
  key: string;
  name?: string;
}

export interface LostBox {
  box: string;
  from?: string;
  lost: string;
  taken?: string;
  to: string;
}

export interface Mount {
  drive: string;
  path: string;
  readonly?: boolean;
}

export interface MovePost {
  from_store?: boolean;
  node: string;
  with?: string[] | null;
}

export interface MovedBox {
  box?: string;
  drive?: string;
  to: string;
}

export interface Node {
  addr?: string;
  boxes: number;
  control_plane?: boolean;
  cpus?: number;
  disk_bytes?: number;
  disk_free?: number;
  drained?: boolean;
  drives: number;
  error?: string;
  joined?: string;
  labels: Record<string, string> | null;
  memory_bytes?: number;
  memory_free?: number;
  name: string;
  own_pool?: Record<string, number> | null;
  pool: number;
  routes?: string[] | null;
  state: string;
  subnet: string;
  swarm_id?: string;
  swarm_state?: string;
}

export interface NodeJoin {
  ca_sha256: string;
  command: string;
  expires_at: string;
  token: string;
}

export interface NodeLabels {
  labels: Record<string, string> | null;
}

export interface NodeLost {
  boxes: LostBox[] | null;
  drives: MovedBox[] | null;
  node: string;
  snapshots: string[] | null;
}

export interface NodePool {
  pool: Record<string, number> | null;
}

export interface Plan {
  changes: Change[] | null;
  notes?: string[] | null;
  project: string;
  serial: number;
}

export interface PlanRequest {
  destroy?: boolean;
  drives?: boolean;
  spec: ProjectSpec;
}

export interface Policy {
  allow_cidrs?: string[] | null;
  allow_domains?: string[] | null;
  name: string;
  project?: string;
  used_by?: string[] | null;
}

export interface PolicyPut {
  policy: string;
}

export interface PolicyReport {
  box: string;
  dns: DNSDecision[] | null;
  drops: Record<string, number> | null;
  policy: string;
}

export interface PolicySpec {
  allow_cidrs?: string[] | null;
  allow_domains?: string[] | null;
  name: string;
}

export interface Port {
  address: string;
  note?: string;
  port: number;
  url?: string;
}

export interface Project {
  applied_at?: string;
  applied_by?: string;
  boxes: string[] | null;
  drift?: Change[] | null;
  drift_error?: string;
  drives: string[] | null;
  name: string;
  owner?: string;
  policies: string[] | null;
  serial?: number;
}

export interface ProjectSpec {
  boxes?: BoxSpec[] | null;
  drives?: DriveSpec[] | null;
  images?: ImageSpec[] | null;
  policies?: PolicySpec[] | null;
  project: string;
  secrets?: SecretSpec[] | null;
}

export interface PromptPost {
  agent?: string;
  task: string;
  workdir?: string;
}

export interface PushSpec {
  local: string;
  to: string;
}

export interface QuotaLimits {
  boxes: number;
  drive_gib: number;
  drives: number;
  jobs: number;
  running: number;
  types: string[] | null;
}

export interface QuotaPut {
  boxes?: number;
  default?: string[] | null;
  drive_gib?: number;
  drives?: number;
  jobs?: number;
  running?: number;
  types?: string[] | null;
}

export interface QuotaUse {
  boxes: number;
  drives: number;
  jobs: number;
  running: number;
}

export interface ReconcileResult {
  changes: string[] | null;
  errors?: Record<string, string> | null;
}

export interface RestorePost {
  snapshot?: string;
}

export interface RunError {
  name: string;
  traceback: string[] | null;
  value: string;
}

export interface RunPost {
  code: string;
  context?: string;
  lang?: string;
  timeout?: string;
}

export interface RunResult {
  context: string;
  display?: (Record<string, unknown> | null)[] | null;
  error?: RunError;
  execution_count: number;
  lang: string;
  result?: Record<string, unknown> | null;
  started?: boolean;
  stderr: string;
  stdout: string;
  timed_out?: boolean;
}

export interface Sample {
  at: string;
  box: string;
  cpu_percent: number;
  disk_bytes: number;
  disk_limit_bytes: number;
  memory_bytes: number;
  memory_limit_bytes: number;
  net_rx_bytes: number;
  net_rx_rate: number;
  net_tx_bytes: number;
  net_tx_rate: number;
  processes: number;
}

export interface Screenshot {
  id: string;
  size: number;
  taken: string;
}

export interface Secret {
  broker?: SecretBroker;
  mine: boolean;
  name: string;
  shared: boolean;
  updated: string;
}

export interface SecretBroker {
  header: string;
  hosts: string[] | null;
  limit?: string;
}

export interface SecretSpec {
  broker: SecretBroker;
  name: string;
}

export interface SetupPost {
  error?: string;
  ok: boolean;
}

export interface SignInLink {
  expires: string;
  url: string;
}

export interface SignInPost {
  box?: string;
  port?: number;
}

export interface SignalPost {
  signal?: string;
}

export interface Snapshot {
  box: string;
  created: string;
  error?: string;
  id: string;
  reason: string;
  ship_error?: string;
  shipped?: string;
  size?: number;
  state: string;
}

export interface TTLPut {
  ttl: string;
}

export interface TokenCreated {
  name: string;
  token: string;
}

export interface TokenInfo {
  created: string;
  name: string;
}

export interface TokenPost {
  e2b?: boolean;
  name: string;
}

export interface User {
  created: string;
  email?: string;
  name: string;
  password?: boolean;
  role: string;
  sso?: string;
}

export interface UserQuota {
  groups?: Record<string, string> | null;
  limits: QuotaLimits;
  own: string[] | null;
  role: string;
  use: QuotaUse;
  user: string;
}

export interface WatchEvent {
  count?: number;
  errno?: string;
  from?: string;
  kind?: string;
  message?: string;
  path?: string;
  size?: number;
  time?: string;
  type: string;
  watches?: number;
}

export interface Whoami {
  images?: string[] | null;
  role: string;
  server: string;
  ssh_host_key?: string;
  ssh_port?: number;
  token: string;
  user: string;
  version: string;
}
