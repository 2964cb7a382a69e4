/** Progress goes to stderr so that stdout carries only the tables. */
export const report = (msg: string): void => void process.stderr.write(`${msg}\n`);
