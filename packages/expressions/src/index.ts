export {
  evaluateMask,
  findTokenIds,
  MaskFailure,
  jsonPointer,
  maxRenderedLength,
  maxTokensPerRequest,
  renderJson,
  renderText,
  stringsIn,
  tokenIdsIn,
  type OpenedTokens,
} from './engine.ts';
export { customFilters, FilterError, isPlainObject } from './filters.ts';
