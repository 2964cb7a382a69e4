/**
 * @sqlinbox/dashboard — the web page `sqlinbox dashboard` serves: the facts of `sqlinbox status`
 * refreshed live, charts sampled while it runs, dead letters to inspect and retry, and a job browser.
 */
export { startDashboard, dashboardApp, type DashboardOptions, type RunningDashboard } from "./server.js";
export { Sampler, sampleOf, type OperatorMoves, type Sample, type TableSample } from "./sampler.js";
export { policiesOf, type JobTables, type RoutePolicy } from "./job-tables.js";
export type { JobBrowseState, JobListPage, JobListRequest, ListedJob } from "./job-list.js";
export { workflowOfJob, type JobDetail, type JobWorkflow, type ShownText } from "./job-page.js";
export { refuseWrite, TOKEN_HEADER, type WriteRefusal } from "./write-guard.js";
export type {
  DashboardSource,
  StatusReport,
  TableStatus,
  GroupStatus,
  AttemptBucket,
  ExpiringLease,
  DeadLetterTarget,
  PeekedRow,
  FormName,
  FlowLimitStatus,
  CancelResult,
  SettledCount,
  CappedCounts,
  CappedCount,
  ScheduleStatus,
  BulkJobAction,
  BulkJobRequest,
  BulkJobReport,
} from "./source.js";
