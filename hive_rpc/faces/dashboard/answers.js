// A prompt's answer controls: radio buttons for its choices, one field per property of
// its schema (options with their descriptions, one's own text), or one text field; and
// how each reads the answer back to send (`read` throws the message to show when the
// answer is not complete).

import { el } from "./dom.js";

export function promptId(record) {
  return record.id;
}

export function controlsFor(record, form) {
  const pid = promptId(record);
  const qid = `q-${pid}`;
  if (Array.isArray(record.choices) && record.choices.length > 0) {
    const group = el("fieldset", { className: "choices" }, el("legend", { text: "Your answer" }));
    record.choices.forEach((choice, i) => {
      const input = el("input", {
        type: "radio",
        name: `answer-${pid}`,
        value: String(choice),
        id: `a-${pid}-${i}`,
        required: true,
        "aria-describedby": qid,
      });
      // Enter on a choice answers with it (radio buttons do not submit by themselves).
      input.addEventListener("keydown", (ev) => {
        if (ev.key === "Enter") {
          ev.preventDefault();
          if (!input.checked) input.checked = true;
          form.requestSubmit();
        }
      });
      group.append(el("label", { className: "choice", for: input.id }, input, ` ${choice}`));
    });
    return { node: group, read: () => readChoice(form, pid, record.choices) };
  }
  const schema = record.schema;
  if (schema && schema.type === "object" && schema.properties) {
    const required = new Set(schema.required || []);
    const fields = [];
    const group = el("fieldset", { className: "fields" }, el("legend", { text: "Your answer" }));
    Object.entries(schema.properties).forEach(([name, prop], i) => {
      const id = `a-${pid}-${i}`;
      const label = prop.title || name;
      const spec = prop.type === "array" ? prop.items || {} : prop;
      if (!Array.isArray(spec.enum) && schemaOptions(spec).length > 0) {
        // Options with titles and descriptions, and perhaps one's own text: one
        // radio (or, for a multi-select, checkbox) per option, its description beside it.
        const node = optionsField(id, name, prop, spec, label, required.has(name), qid);
        fields.push({ name, prop, options: node.read });
        group.append(node.node);
        return;
      }
      let input;
      if (Array.isArray(prop.enum)) {
        input = el("select", { id, name, required: required.has(name) });
        if (!required.has(name)) input.append(el("option", { value: "", text: "(none)" }));
        for (const option of prop.enum) {
          input.append(el("option", { value: String(option), text: String(option) }));
        }
      } else if (prop.type === "boolean") {
        input = el("input", { id, name, type: "checkbox" });
      } else if (prop.type === "number" || prop.type === "integer") {
        input = el("input", {
          id,
          name,
          type: "number",
          step: prop.type === "integer" ? "1" : "any",
          required: required.has(name),
        });
      } else {
        input = el("input", { id, name, type: "text", required: required.has(name) });
      }
      input.setAttribute("aria-describedby", qid);
      fields.push({ name, prop, input });
      const help = prop.description ? el("small", { text: ` ${prop.description}` }) : null;
      group.append(el("label", { className: "field", for: id }, el("span", { text: label }), input, help));
    });
    return { node: group, read: () => readFields(fields) };
  }
  const id = `a-${pid}-text`;
  const input = el("input", { id, type: "text", name: "answer", autocomplete: "off", "aria-describedby": qid });
  const node = el("label", { className: "field", for: id }, el("span", { text: "Your answer" }), input);
  return { node, read: () => input.value };
}

// The consts of a oneOf/anyOf, with their titles and descriptions.
function schemaOptions(spec) {
  const entries = spec.oneOf || spec.anyOf || [];
  return entries.filter((o) => o && typeof o === "object" && "const" in o);
}

// The free-text entry of an anyOf ({"type": "string"}, no const): one's own answer.
function ownEntry(spec) {
  return (spec.anyOf || []).find((o) => o && !("const" in o) && o.type === "string");
}

function optionsField(id, name, prop, spec, label, required, qid) {
  const multi = prop.type === "array";
  const type = multi ? "checkbox" : "radio";
  const group = el("fieldset", { className: "options" }, el("legend", { text: label }));
  if (prop.description) group.append(el("p", { className: "help", text: prop.description }));
  const boxes = [];
  const add = (value, title, description, j) => {
    const input = el("input", { type, name: `${id}-opt`, id: `${id}-${j}`, "aria-describedby": qid });
    boxes.push({ input, value });
    const help = description ? el("small", { text: ` ${description}` }) : null;
    group.append(el("label", { className: "choice", for: input.id }, input, ` ${title}`, help));
    return input;
  };
  schemaOptions(spec).forEach((o, j) => add(o.const, String(o.title ?? o.const), o.description, j));
  const own = ownEntry(spec);
  let text = null;
  if (own) {
    const pick = add(undefined, String(own.title || "Other: type your own answer"), own.description, "own");
    text = el("input", { type: "text", id: `${id}-own-text`, "aria-label": "Your own answer" });
    // Typing one's own answer picks it.
    text.addEventListener("input", () => {
      if (text.value.trim() !== "") pick.checked = true;
    });
    group.append(el("label", { className: "field", for: text.id }, el("span", { text: "Your own answer" }), text));
  }
  const read = () => {
    const values = [];
    for (const { input, value } of boxes) {
      if (!input.checked) continue;
      if (value !== undefined) values.push(value);
      else if (text && text.value.trim() !== "") values.push(text.value.trim());
      else throw new Error(`${label}: type your own answer, or pick an option.`);
    }
    if (multi) return values.length === 0 && !required ? undefined : values;
    if (values.length === 0) {
      if (required) throw new Error(`${label}: pick one of the options.`);
      return undefined;
    }
    return values[0];
  };
  return { node: group, read };
}

function readChoice(form, pid, choices) {
  const checked = form.querySelector(`input[name="answer-${CSS.escape(pid)}"]:checked`);
  if (!checked) throw new Error("Pick one of the choices first.");
  // Send the choice itself (choices may be numbers or strings).
  const found = choices.find((c) => String(c) === checked.value);
  return found === undefined ? checked.value : found;
}

function readFields(fields) {
  const answer = {};
  for (const { name, prop, input, options } of fields) {
    if (options) {
      const value = options();
      if (value !== undefined) answer[name] = value;
    } else if (prop.type === "boolean") {
      answer[name] = input.checked;
    } else if (input.value === "") {
      continue;
    } else if (prop.type === "number" || prop.type === "integer") {
      answer[name] = Number(input.value);
    } else if (Array.isArray(prop.enum)) {
      answer[name] = prop.enum.find((o) => String(o) === input.value) ?? input.value;
    } else {
      answer[name] = input.value;
    }
  }
  return answer;
}
