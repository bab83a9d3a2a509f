/**
 * The subset of OpenCode 1.18.33's plugin host that c2c-bridge uses, typed structurally.
 *
 * Why our own types rather than `@opencode-ai/plugin`'s: the published SDK types lag the
 * 1.18.33 runtime (no `permission.asked` / `permission.v2.asked` events), and its tool type
 * demands zod schemas while the host accepts plain JSON-Schema property objects. Every shape
 * here was checked against the real binary (see shared/docs/opencode-host.md).
 */

/** A text part we inject with `promptAsync`. `metadata` is persisted; the model sees only `text`. */
export interface InjectTextPart {
  type: "text";
  text: string;
  synthetic?: boolean;
  metadata?: Record<string, unknown>;
}

/** The v1 SDK client handed to the plugin (only the calls we make). */
export interface HostClient {
  session: {
    promptAsync(options: {
      path: { id: string };
      body: { parts: InjectTextPart[]; noReply?: boolean; messageID?: string };
    }): Promise<{ error?: unknown; response?: { status: number } }>;
    messages(options: { path: { id: string } }): Promise<{ data?: HostMessageWithParts[]; error?: unknown }>;
    /** One message with its parts (`GET /session/:id/message/:messageID`). */
    message?(options: { path: { id: string; messageID: string } }): Promise<{ data?: HostMessageWithParts; error?: unknown }>;
    get(options: { path: { id: string } }): Promise<{ data?: HostSession; error?: unknown }>;
    status?(options?: object): Promise<{ data?: Record<string, { type: string }>; error?: unknown }>;
  };
  app: {
    log(options: {
      body: { service: string; level: "debug" | "info" | "warn" | "error"; message: string; extra?: Record<string, unknown> };
    }): Promise<unknown>;
  };
  tui?: {
    showToast?(options: { body: { title?: string; message: string; variant: "info" | "success" | "warning" | "error" } }): Promise<unknown>;
  };
  /** Permission replies (classic loop). Only the reply capability module may call this. */
  postSessionIdPermissionsPermissionId?(options: {
    path: { id: string; permissionID: string };
    body: { response: "once" | "always" | "reject" };
  }): Promise<{ error?: unknown }>;
  /**
   * The SDK's underlying HTTP client (hey-api), bound to the instance directory and the
   * in-process fetch. Used only by the reply capability for the v2 permission endpoint,
   * which the v1 SDK has no method for.
   */
  _client?: {
    post(options: {
      url: string;
      path?: Record<string, string>;
      body?: unknown;
      headers?: Record<string, string>;
    }): Promise<{ data?: unknown; error?: unknown; response?: { status: number } }>;
  };
}

/** `input` of the plugin function. */
export interface PluginInput {
  client: HostClient;
  directory: string;
  worktree: string;
  serverUrl?: URL;
  project?: { id?: string };
}

/** Session info as in `session.created` / `session.updated` / `GET /session/:id`. */
export interface HostSession {
  id: string;
  parentID?: string;
  directory?: string;
  title?: string;
}

/** Message info (`message.updated`). Times are epoch milliseconds. */
export interface HostMessage {
  id: string;
  sessionID: string;
  role: "user" | "assistant";
  parentID?: string;
  time?: { created?: number; completed?: number };
  finish?: string;
  /** Set on an assistant message that failed, e.g. `{ name: "MessageAbortedError" }` after an abort. */
  error?: { name?: string } | null;
  summary?: unknown;
  mode?: string;
}

/** A part (`message.part.updated`). */
export interface HostPart {
  id: string;
  sessionID: string;
  messageID: string;
  type: string;
  text?: string;
  synthetic?: boolean;
  metadata?: Record<string, unknown>;
  callID?: string;
  tool?: string;
  state?: { status?: string; input?: unknown };
}

/** One message with its parts (`GET /session/:id/message`). */
export interface HostMessageWithParts {
  info: HostMessage;
  parts: HostPart[];
}

/** An event as delivered to the `event` hook. */
export interface HostEvent {
  type: string;
  properties: Record<string, unknown>;
}

/** The context a tool's `execute` receives. */
export interface ToolContext {
  sessionID: string;
  messageID: string;
  agent: string;
  directory: string;
  worktree?: string;
}

/** A tool definition with plain JSON-Schema properties as `args`. */
export interface ToolDef {
  description: string;
  args: Record<string, { type: string; description?: string; items?: object }>;
  execute(args: Record<string, unknown>, ctx: ToolContext): Promise<string>;
}

/** The hooks we return. */
export interface PluginHooks {
  event?: (input: { event: HostEvent }) => Promise<void>;
  config?: (cfg: Record<string, unknown>) => Promise<void>;
  tool?: Record<string, ToolDef>;
  /** A new user message (typed, or injected by a plugin) is about to be stored. */
  "chat.message"?: (
    input: { sessionID: string; agent?: string; messageID?: string },
    output: { message: unknown; parts: Array<Record<string, unknown>> },
  ) => Promise<void>;
  "command.execute.before"?: (
    input: { command: string; sessionID: string; arguments: string },
    output: { parts: Array<Record<string, unknown>> },
  ) => Promise<void>;
  dispose?: () => Promise<void>;
}
