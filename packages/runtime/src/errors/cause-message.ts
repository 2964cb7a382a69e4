/** The message of what a driver (or anything else) threw, for a sentence that quotes it. */
export const causeMessage = (cause: unknown): string => (cause as Error).message;
