export {
  DataExpressionError,
  evaluateAliasExpression,
  evaluateDataExpression,
  evaluateMask,
  findTokenIds,
  expressionSyntaxError,
  fieldUnder,
  isDataExpression,
  MaskFailure,
  maxRenderedLength,
  maxTokensPerRequest,
  renderJson,
  renderText,
  stringsIn,
  tokenIdsIn,
  type OpenedTokens,
} from './engine.ts';
export { customFilters, FilterError, isPlainObject } from './filters.ts';
