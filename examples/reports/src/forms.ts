import { byHandReports } from "./by-hand.js";
import { declarativeReports } from "./declarative.js";

/** Both ways of describing the table; they must behave identically. */
export const reportForms = {
  declarative: declarativeReports,
  "by hand": byHandReports,
} as const;
export type ReportForm = keyof typeof reportForms;
