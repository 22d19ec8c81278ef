/** The host (and port) of a URL, to name an authority or a calendar in one word; the text itself when it is no URL. */
export const hostOf = (url: string): string => (URL.canParse(url) ? new URL(url).host : url);
