// Wire types come from the contract; hand-written code names them here once.
import type { components } from '../../generated/openapi.ts';

type Schemas = components['schemas'];

export type ChatCompletionRequest = Schemas['ChatCompletionRequest'];
export type ChatCompletionResponse = Schemas['ChatCompletionResponse'];
export type ChatCompletionChunk = Schemas['ChatCompletionChunk'];
export type ChunkDelta = Schemas['ChunkDelta'];
export type Message = Schemas['Message'];
export type ContentPart = Schemas['ContentPart'];
export type ToolCall = Schemas['ToolCall'];
export type Tool = Schemas['Tool'];
export type ToolChoice = Schemas['ToolChoice'];
export type ResponseFormat = Schemas['ResponseFormat'];
export type FinishReason = Schemas['FinishReason'];
export type Usage = Schemas['Usage'];
export type PrecontextEntry = Schemas['PrecontextEntry'];
export type ModelId = Schemas['ModelId'];
export type ModelList = Schemas['ModelList'];
export type ReasoningEffort = Schemas['ReasoningEffort'];
export type ErrorEnvelope = Schemas['ErrorEnvelope'];
export type ErrorType = Schemas['ErrorType'];
// The results of the built-in tasks (PrecontextEntry.result).
export type OcrPage = Schemas['OcrPage'];
export type OcrLine = Schemas['OcrLine'];
export type OcrDocument = Schemas['OcrDocument'];
export type OcrResult = Schemas['OcrResult'];
export type GuiDetectionResult = Schemas['GuiDetectionResult'];
export type WebSearchResult = Schemas['WebSearchResult'];
export type ScraperResult = Schemas['ScraperResult'];
export type GuardrailsResult = Schemas['GuardrailsResult'];
