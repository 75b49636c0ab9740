export {
  findTokenIds,
  expressionSyntaxError,
  fieldUnder,
  maxRenderedLength,
  maxTokensPerRequest,
  renderJson,
  renderText,
  stringsIn,
  tokenIdsIn,
  type OpenedTokens,
} from './engine.ts';
export { customFilters, FilterError, isPlainObject } from './filters.ts';
